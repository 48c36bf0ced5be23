import { BoundedMemo } from '../../domain/bounded-memo';

it('keeps the answers used last, and computes one only when it has none', () => {
  const memo = new BoundedMemo<string | null>(2);
  let computed = 0;
  const answer = (key: string) =>
    memo.answer(key, () => ((computed += 1), key === 'ok' ? null : `bad ${key}`));
  expect(answer('ok')).toBeNull();
  expect(answer('ok')).toBeNull(); // a kept null is an answer
  expect(answer('x')).toBe('bad x');
  expect(computed).toBe(2);
  answer('ok'); // used again: now the last
  answer('y'); // pushes out x, used longest ago
  expect(memo.get('x')).toBeUndefined();
  expect(memo.get('ok')).toBeNull();
  expect(computed).toBe(3);
});
