import { baseUrlOf, serverRoot } from '../src/cli/base-url';
import { UsageError } from '../src/cli/exit-codes';

describe('the CLI’s base URL', () => {
  it.each([
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080'],
    ['https://cp.example.com/v1', 'https://cp.example.com'],
    ['https://cp.example.com/v1/', 'https://cp.example.com'],
    ['https://cp.example.com/gateway/v1', 'https://cp.example.com/gateway'],
    ['https://cp.example.com/v10', 'https://cp.example.com/v10'],
  ])('takes %s as the server at %s', (given, root) => {
    expect(serverRoot(given, '--base-url')).toBe(root);
  });

  it.each([
    ['not-a-url', /not a URL/],
    ['127.0.0.1:8080', /not a URL/],
    ['localhost:8080', /localhost: is not http\(s\)/],
    ['ftp://cp.example.com', /ftp: is not http\(s\)/],
    ['http://me:secret@cp.example.com', /user or password/],
    ['http://cp.example.com/?org=1', /query or fragment/],
  ])('refuses %s as a usage error that says what a valid value looks like', (given, why) => {
    const refusal = () => serverRoot(given, 'CP_BASE_URL');
    expect(refusal).toThrow(UsageError);
    expect(refusal).toThrow(why);
    expect(refusal).toThrow(/^CP_BASE_URL ".+": .+; give the server's http:\/\/ or https:\/\/ URL/);
  });

  it('takes --base-url over CP_BASE_URL, and an empty CP_BASE_URL as unset', () => {
    expect(baseUrlOf('http://a.example', { CP_BASE_URL: 'http://b.example' })).toBe('http://a.example');
    expect(baseUrlOf(undefined, { CP_BASE_URL: 'http://b.example/v1' })).toBe('http://b.example');
    expect(baseUrlOf(undefined, { CP_BASE_URL: '' })).toBe('http://127.0.0.1:8080');
    expect(() => baseUrlOf('', {})).toThrow(/^--base-url "": not a URL/);
  });
});
