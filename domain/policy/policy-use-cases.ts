import { newAuditEvent } from '../audit/new-event';
import { sameValue } from '../same-value';
import type { Clock } from '../clock';
import { conflict, invalidField, notFound } from '../errors';
import { newId } from '../ids';
import type { PageRequest } from '../model';
import type { Tx, UnitOfWork } from '../ports';
import { actorOf, type CallContext } from '../principal';
import {
  listItemsOf,
  MAX_ORG_LIST_ITEMS,
  MAX_ORG_PATTERN_PROGRAM,
  MAX_POLICIES_PER_ORG,
  patternProgramOf,
} from './limits';
import type { Policy } from './policy';
import type { PolicyPage, StoredPatterns } from './policy-store.port';
import { policyDocument } from './policy-document';

export interface PolicyDeps {
  uow: UnitOfWork;
  clock: Clock;
}

/** What a client sets; id, version and times the service keeps. */
export type PolicyFields = Pick<
  Policy,
  'name' | 'description' | 'enabled' | 'priority' | 'mode' | 'appliesTo' | 'rules'
>;

/** A policy with the org's policy_version: after a change, the one it produced; on a read, the current one. */
export interface VersionedPolicy {
  policy: Policy;
  policyVersion: number;
}

const FIELDS: (keyof PolicyFields)[] = [
  'name',
  'description',
  'enabled',
  'priority',
  'mode',
  'appliesTo',
  'rules',
];

function recordPolicyEvent(
  tx: Tx,
  ctx: CallContext,
  action: 'policy.created' | 'policy.updated' | 'policy.deleted',
  change: { old: Policy | null; new: Policy | null; policyVersion: number; at: Date },
) {
  const policy = (change.new ?? change.old) as Policy;
  tx.audit.record(
    newAuditEvent({
      orgId: policy.orgId,
      actor: actorOf(ctx.principal),
      action,
      resource: { type: 'policy', id: policy.id },
      at: change.at,
      requestId: ctx.requestId,
      details: {
        policy_version: change.policyVersion,
        old: change.old && policyDocument(change.old),
        new: change.new && policyDocument(change.new),
      },
    }),
  );
}

async function loadPolicy(tx: Tx, ctx: CallContext, id: string): Promise<Policy> {
  const policy = await tx.policies.get(ctx.principal.orgId, id);
  if (!policy) throw notFound('policy');
  return policy;
}

/** Reads run outside a transaction: the version comes in the policy's own statement, to match it. */
export async function getPolicy(deps: PolicyDeps, ctx: CallContext, id: string): Promise<VersionedPolicy> {
  const { policy, policyVersion } = await deps.uow.read((tx) =>
    tx.policies.getWithVersion(ctx.principal.orgId, id),
  );
  if (!policy) throw notFound('policy');
  return { policy, policyVersion };
}

export const listPolicies = (deps: PolicyDeps, ctx: CallContext, page: PageRequest): Promise<PolicyPage> =>
  deps.uow.read((tx) => tx.policies.list(ctx.principal.orgId, page));

const instructionsOf = (p: StoredPatterns): number => p.instructions ?? patternProgramOf(p.rules);

/**
 * What the org's enabled policies would hold together of one measure if the written policy held
 * `own` of it (0 when it is disabled); null when the write adds nothing, so a set from before a
 * limit can still shrink. The others are counted from what the store kept.
 */
function totalIfAdded(
  enabled: StoredPatterns[],
  old: Policy | null,
  own: number,
  sizeOf: (p: StoredPatterns) => number,
): number | null {
  const stored = enabled.find((p) => p.id === old?.id);
  if (own - (stored ? sizeOf(stored) : 0) <= 0) return null;
  return enabled.reduce((sum, p) => (p === stored ? sum : sum + sizeOf(p)), own);
}

/**
 * What the policy's patterns compile to (the store keeps it with the policy), after refusing a
 * change that takes the patterns of the org's enabled policies past MAX_ORG_PATTERN_PROGRAM
 * instructions together (a 400 naming the sizes). The others are counted from what the store kept,
 * so a write compiles only its own patterns. A change that does not add to them is taken even
 * above the limit (a set from before the limit can still shrink). Asked under the org's version
 * lock, so two writers cannot pass it together.
 */
function patternRoomFor(enabled: StoredPatterns[], old: Policy | null, fields: PolicyFields): number {
  const own = patternProgramOf(fields.rules);
  const total = totalIfAdded(enabled, old, fields.enabled ? own : 0, instructionsOf);
  if (total !== null && total > MAX_ORG_PATTERN_PROGRAM)
    throw invalidField(
      'rules',
      `the patterns of the org's enabled policies would compile to ${total} instructions together, ` +
        `more than ${MAX_ORG_PATTERN_PROGRAM}: use fewer or simpler patterns, or disable a policy`,
    );
  return own;
}

/**
 * Refuses a change that takes the items of the lists of the org's enabled policies past
 * MAX_ORG_LIST_ITEMS together (a 400 naming the counts), as patternRoomFor does for patterns: a
 * change that does not add to them is taken even above the limit, and it is asked under the org's
 * version lock.
 */
function listRoomFor(enabled: StoredPatterns[], old: Policy | null, fields: PolicyFields): void {
  const total = totalIfAdded(enabled, old, fields.enabled ? listItemsOf(fields) : 0, (p) => p.listItems);
  if (total !== null && total > MAX_ORG_LIST_ITEMS)
    throw invalidField(
      'rules',
      `the lists of the org's enabled policies would hold ${total} items together, more than ` +
        `${MAX_ORG_LIST_ITEMS}: use shorter lists, or disable a policy`,
    );
}

/** The org's version is bumped first: its row lock makes the count below exact under concurrency. */
export async function createPolicy(
  deps: PolicyDeps,
  ctx: CallContext,
  fields: PolicyFields,
): Promise<VersionedPolicy> {
  const orgId = ctx.principal.orgId;
  return deps.uow.transaction(async (tx) => {
    const policyVersion = await tx.policies.bumpVersion(orgId);
    if ((await tx.policies.countLive(orgId)) >= MAX_POLICIES_PER_ORG)
      throw invalidField(
        'body',
        `the org already has ${MAX_POLICIES_PER_ORG} policies, the most it may have: delete one first`,
      );
    const enabled = await tx.policies.enabledPatterns(orgId);
    const instructions = patternRoomFor(enabled, null, fields);
    listRoomFor(enabled, null, fields);
    const now = deps.clock.now();
    const policy: Policy = { id: newId('pol'), orgId, ...fields, version: 1, createdAt: now, updatedAt: now };
    await tx.policies.insert(policy, instructions);
    recordPolicyEvent(tx, ctx, 'policy.created', { old: null, new: policy, policyVersion, at: now });
    return { policy, policyVersion };
  });
}

/**
 * PUT: the fields given replace the policy's. A request that changes nothing leaves the policy,
 * its version and the org's policy_version as they were (a retried PUT is harmless). With
 * `fromVersion`, the version the change was made from, a policy changed since is not overwritten
 * (409 conflict): two editors cannot undo each other's change unseen (QA).
 */
export async function replacePolicy(
  deps: PolicyDeps,
  ctx: CallContext,
  id: string,
  fields: PolicyFields,
  fromVersion?: number,
): Promise<VersionedPolicy> {
  const orgId = ctx.principal.orgId;
  return deps.uow.transaction(async (tx) => {
    const current = await tx.policies.lockVersion(orgId);
    const old = await loadPolicy(tx, ctx, id);
    if (fromVersion !== undefined && fromVersion !== old.version)
      throw conflict(
        `the policy is at version ${old.version}, not ${fromVersion}: it changed since it was read; read it again and send the change from there`,
      );
    if (FIELDS.every((k) => sameValue(old[k], fields[k]))) return { policy: old, policyVersion: current };
    const enabled = await tx.policies.enabledPatterns(orgId);
    const instructions = patternRoomFor(enabled, old, fields);
    listRoomFor(enabled, old, fields);
    const policyVersion = await tx.policies.bumpVersion(orgId);
    const now = deps.clock.now();
    const policy: Policy = { ...old, ...fields, version: old.version + 1, updatedAt: now };
    await tx.policies.replace(policy, instructions);
    recordPolicyEvent(tx, ctx, 'policy.updated', { old, new: policy, policyVersion, at: now });
    return { policy, policyVersion };
  });
}

export async function deletePolicy(deps: PolicyDeps, ctx: CallContext, id: string): Promise<VersionedPolicy> {
  return deps.uow.transaction(async (tx) => {
    const policyVersion = await tx.policies.bumpVersion(ctx.principal.orgId);
    const old = await loadPolicy(tx, ctx, id);
    const now = deps.clock.now();
    await tx.policies.markDeleted(old.orgId, old.id, now);
    recordPolicyEvent(tx, ctx, 'policy.deleted', { old, new: null, policyVersion, at: now });
    return { policy: old, policyVersion };
  });
}
