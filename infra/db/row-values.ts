/**
 * Column values as PostgreSQL returns them, through the driver (bigints as strings, timestamps as
 * Date or text) or through row_to_json (bigints as numbers, timestamps as text): mappers accept both.
 */
export type Num = number | string;
export type Time = Date | string;

export const toDate = (t: Time): Date => (t instanceof Date ? t : new Date(t));
export const toDateOrNull = (t: Time | null): Date | null => (t === null ? null : toDate(t));
