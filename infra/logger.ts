import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { bufferedDestination } from './logging/buffered-stdout';
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

/**
 * Readable lines for a person at a terminal in development; JSON lines everywhere else (files,
 * pipes, log collectors, production), written in batches (infra/logging/buffered-stdout.ts).
 * Redaction and serializers apply either way.
 */
export function terminalDestination(
  nodeEnv = process.env.NODE_ENV,
  isTty = process.stdout.isTTY,
): pino.DestinationStream | undefined {
  if (nodeEnv === 'production' || !isTty) return undefined;
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' });
}

export function createLogger(
  level: string,
  destination: pino.DestinationStream = terminalDestination() ?? bufferedDestination(),
): Logger {
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
