import pino, { type Logger } from 'pino';
import { describeError } from './logging/safe-error';

export type { Logger };

/** Fields that may carry secrets are censored wherever they appear in a log line. */
const REDACT = [
  'password',
  'secret',
  'key',
  'token',
  'session_token',
  'invite_token',
  'authorization',
  '*.password',
  '*.secret',
  '*.key',
  '*.token',
  '*.session_token',
  '*.invite_token',
  '*.authorization',
  'req.headers.authorization',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT, censor: '[redacted]' },
      // Every `err` in a log line goes through this: database errors lose their SQL and values.
      serializers: { err: describeError },
      base: { service: 'control-plane' },
    },
    destination,
  );
}
