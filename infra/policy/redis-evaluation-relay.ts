import type Redis from 'ioredis';
import type { Decision } from '../../domain/policy/decision';
import type { Claim, EvaluationRelay, EvaluationRequest } from '../../domain/policy/evaluation';

/** An evaluation is decided within seconds; what is left after this is dropped. */
const KEEP_SECONDS = 120;

/**
 * Moves the request to its claimed key (RENAME keeps its time to live): 1 taken now, 2 taken
 * before (a retry of the job that took it), 0 gone (withdrawn, answered or expired). Withdrawing
 * deletes only the unclaimed key, so the two cannot both succeed.
 */
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
  return 1
end
return redis.call('EXISTS', KEYS[2]) * 2`;

const CLAIMS: Claim[] = [null, 'taken', 'again'];

const reviveDecision = (d: Decision): Decision => ({ ...d, evaluatedAt: new Date(d.evaluatedAt) });

/** The evaluation relay in Redis: short-lived keys, so prompt text is kept neither in jobs nor in PostgreSQL. */
export class RedisEvaluationRelay implements EvaluationRelay {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  async put(request: EvaluationRequest): Promise<void> {
    await this.redis.set(this.key('request', request.id), JSON.stringify(request), 'EX', KEEP_SECONDS);
  }

  async request(id: string): Promise<EvaluationRequest | null> {
    const [pending, claimed] = await this.redis.mget(this.key('request', id), this.key('claimed', id));
    const text = pending ?? claimed;
    return text ? (JSON.parse(text) as EvaluationRequest) : null;
  }

  async claim(id: string): Promise<Claim> {
    const taken = await this.redis.eval(CLAIM, 2, this.key('request', id), this.key('claimed', id));
    return CLAIMS[Number(taken)] ?? null;
  }

  async withdraw(id: string): Promise<boolean> {
    return (await this.redis.del(this.key('request', id))) === 1;
  }

  async answer(id: string, decision: Decision): Promise<void> {
    await this.redis
      .multi()
      .set(this.key('answer', id), JSON.stringify(decision), 'EX', KEEP_SECONDS)
      .del(this.key('request', id), this.key('claimed', id))
      .exec();
  }

  async answered(id: string): Promise<Decision | null> {
    const text = await this.redis.get(this.key('answer', id));
    return text ? reviveDecision(JSON.parse(text) as Decision) : null;
  }

  private key(kind: 'request' | 'claimed' | 'answer', id: string): string {
    return `${this.prefix}:acs:${kind}:${id}`;
  }
}
