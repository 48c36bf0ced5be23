/**
 * Each provider attempt of an invocation reserves and settles under its own id in the cap ledger,
 * so a retry is a new charge that must fit the caps, and a reservation found already held names
 * the attempt whose outcome is unknown. The first attempt uses the invocation id itself.
 */
export const chargeIdOf = (invocationId: string, attempt: number): string =>
  attempt <= 1 ? invocationId : `${invocationId}#${attempt}`;

export function parseChargeId(chargeId: string): { invocationId: string; attempt: number } {
  const at = chargeId.lastIndexOf('#');
  if (at < 0) return { invocationId: chargeId, attempt: 1 };
  const attempt = Number(chargeId.slice(at + 1));
  return Number.isSafeInteger(attempt) && attempt > 1
    ? { invocationId: chargeId.slice(0, at), attempt }
    : { invocationId: chargeId, attempt: 1 };
}
