import type Redis from 'ioredis';
import type { Decision } from '../../domain/policy/decision';
import type { EvaluationRelay, EvaluationRequest } from '../../domain/policy/evaluation';

/** An evaluation is decided within seconds; what is left after this is dropped. */
const KEEP_SECONDS = 120;

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
    const text = await this.redis.get(this.key('request', id));
    return text ? (JSON.parse(text) as EvaluationRequest) : null;
  }

  async answer(id: string, decision: Decision): Promise<void> {
    await this.redis
      .multi()
      .set(this.key('answer', id), JSON.stringify(decision), 'EX', KEEP_SECONDS)
      .del(this.key('request', id))
      .exec();
  }

  async answered(id: string): Promise<Decision | null> {
    const text = await this.redis.get(this.key('answer', id));
    return text ? reviveDecision(JSON.parse(text) as Decision) : null;
  }

  private key(kind: 'request' | 'answer', id: string): string {
    return `${this.prefix}:acs:${kind}:${id}`;
  }
}
