/** A port for time, so use cases and tests agree on "now". */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export const addSeconds = (at: Date, seconds: number): Date => new Date(at.getTime() + seconds * 1000);
export const addDays = (at: Date, days: number): Date => addSeconds(at, days * 86_400);
