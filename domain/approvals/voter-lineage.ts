import type { Actor } from '../audit/audit-event';

/**
 * Who stands behind an identity that votes or asks. A key is the same identity as the keys it
 * was rotated from and into, and whoever minted a key (a person or another key) held its secret.
 * So "the identity that requested may not vote" and "N distinct approvers" are judged on these
 * lines, not on raw ids: a requester cannot approve through its rotated key or a key it minted,
 * and one person cannot vote twice through a key of their own.
 */
export interface Lineage {
  /**
   * The identity itself: for a key, the first key of its rotation line (or, when its minter holds
   * that key, the minter); else the actor's id.
   */
  identity: string;
  /** Every id the identity came from: its own, its rotation line's, and their minters', transitively. */
  behind: ReadonlySet<string>;
}

/** One key as a lineage reads it: who minted it, and which key it replaced (if a rotation). */
export interface KeyLink {
  id: string;
  createdBy: string | null;
  replaced: string | null;
  /** Its minter holds it (the signup's key): the key is its minter's identity, not one of its own. */
  heldByCreator?: boolean;
}

export interface LineageSource {
  /** The keys the given actors come from, transitively, in their org. */
  linksOf(orgId: string, actors: readonly Actor[]): Promise<KeyLink[]>;
}

/** The lineage of one actor id over the links read for it (an id not among them is a person or system). */
export function lineageOf(id: string, links: ReadonlyMap<string, KeyLink>): Lineage {
  let identity = id;
  const line = new Set([id]);
  for (let link = links.get(id); link?.replaced && !line.has(link.replaced); link = links.get(link.replaced))
    line.add((identity = link.replaced));
  // The signup's key is the person who signed up: a request made with it is theirs to not approve.
  const first = links.get(identity);
  if (first?.heldByCreator && first.createdBy) identity = first.createdBy;
  const behind = new Set<string>();
  const next = [id];
  for (let at = next.pop(); at !== undefined; at = next.pop()) {
    if (behind.has(at)) continue;
    behind.add(at);
    const link = links.get(at);
    if (link?.replaced) next.push(link.replaced);
    if (link?.createdBy) next.push(link.createdBy);
  }
  return { identity, behind };
}

/** The lineages of several actors, by actor id. */
export function lineages(actors: readonly Actor[], links: readonly KeyLink[]): Map<string, Lineage> {
  const byId = new Map(links.map((l) => [l.id, l]));
  return new Map(actors.map((a) => [a.id, lineageOf(a.id, byId)]));
}

/** The voter is, or came from, the identity that asked: a vote would approve its own request. */
export const speaksFor = (voter: Lineage, requester: Lineage): boolean =>
  voter.behind.has(requester.identity);

/** Two voters who count as one: the same identity, or one minted (a line leading to) the other. */
export const oneVoice = (a: Lineage, b: Lineage): boolean => speaksFor(a, b) || speaksFor(b, a);
