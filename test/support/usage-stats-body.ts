/** `GET /v1/stats/usage` as the contract spells it (API.md): the figures of the totals and of each group. */
export interface Figures {
  calls: number;
  succeeded: number;
  failed: number;
  denied: number;
  cancelled: number;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

export type UsageGroup = Figures & { key: string };

export interface UsageBody {
  from: string;
  to: string;
  totals: Figures;
  groups: UsageGroup[];
  groups_truncated: boolean;
}
