import { auditRecordset, INSERT_AUDIT } from '../db/audit-rows';
import type { Statement } from '../db/prepared-pool';
import { decisionRecordset, INSERT_DECISIONS } from '../decisions/decision-sql';
import { approvalRecordset, INSERT_APPROVALS } from '../approvals/approval-sql';

/**
 * The invoke path's statements, prepared (see PreparedPool). Writes take their rows as JSON
 * (json_to_recordset), so one statement writes a whole batch, and data-modifying CTEs put the
 * change and its audit entries in the same statement: one round trip, one transaction. Audit rows
 * are inserted only for invocations the conditional update changed (joined on the resource id).
 */
const statement = (name: string, text: string): Statement => ({ name: `cp_${name}`, text });

/** $1 invocations JSON, $2 audit JSON. */
export const INSERT_QUEUED = statement(
  'insert_queued',
  `
  with rows as (
    select * from json_to_recordset($1::json) as r(
      id text, org_id text, session_id text, agent_id text, requested_by_type text, requested_by text,
      model text, provider text, credential_ref text, request jsonb, input_price_micros bigint,
      output_price_micros bigint, reserve_micros bigint, reserve_tokens bigint, request_id text,
      created_at timestamptz)
  ),
  inv as (
    insert into invocations (id, org_id, session_id, agent_id, requested_by_type, requested_by, status,
      model, provider, credential_ref, request, input_price_micros, output_price_micros, reserve_micros,
      reserve_tokens, request_id, created_at, updated_at)
    select id, org_id, session_id, agent_id, requested_by_type, requested_by, 'queued', model, provider,
      credential_ref, request, input_price_micros, output_price_micros, reserve_micros, reserve_tokens,
      request_id, created_at, created_at
    from rows
    returning id
  ),
  aud as (${INSERT_AUDIT} select * from ${auditRecordset('$2')} returning 1)
  select (select count(*) from inv) as invocations, (select count(*) from aud) as events`,
);

/**
 * What a decision writes beside the invocation rows the CTE `written` returns (their ids): the
 * decisions ($2), the approvals ($4) and the audit entries ($3) of those rows only, and the ids
 * applied. Shared by INSERT_DECIDED and DECIDE.
 */
const decisionRows = (written: string): string => `
  d as (
    ${INSERT_DECISIONS} select * from ${decisionRecordset('$2')} where d.invocation_id in (select id from ${written})
  ),
  ap as (
    ${INSERT_APPROVALS} select * from ${approvalRecordset('$4')} where p.invocation_id in (select id from ${written})
    returning id
  ),
  aud as (
    ${INSERT_AUDIT} select * from ${auditRecordset('$3')}
    where a.resource_id in (select id from ${written}) or a.resource_id in (select id from ap)
  )
  select coalesce(array_agg(id), '{}') as applied from ${written}`;

/**
 * $1 invocations JSON (insert columns with their decision's, and what admission read:
 * policy_version, agent_version, credential_version), $2 decisions JSON, $3 audit JSON, $4 approvals JSON. An
 * invocation decided before it was recorded (an invoke the API runs itself, see
 * decide-at-submit.ts): written once, with its decision, the decision's row and approval, and its
 * audit entries (requested, then decided), instead of INSERT_QUEUED and then DECIDE. Only while
 * nothing it was decided on has changed since admission read it: the session still open, the
 * org's policy_version, the agent (status and version) and the credential (not deleted, not
 * rotated: the run would call with the secret admission read) as they were, the key
 * that asked not revoked or expired. Otherwise nothing is written, and the invocation goes the
 * guardian stage's way, which reads all of that after it is recorded (QA: a session closed while
 * sixty invokes were being decided let them all run and charge it). Each lookup is a lateral
 * subquery with `limit 1`, as in INVOKE_CONTEXTS, so it stays a keyed lookup per row.
 */
export const INSERT_DECIDED = statement(
  'insert_decided',
  `
  with rows as (
    select * from json_to_recordset($1::json) as r(
      id text, org_id text, session_id text, agent_id text, requested_by_type text, requested_by text,
      status text, model text, provider text, credential_ref text, request jsonb, input_price_micros bigint,
      output_price_micros bigint, reserve_micros bigint, reserve_tokens bigint, decision jsonb, error jsonb,
      approval_id text, request_id text, created_at timestamptz, decided_at timestamptz,
      policy_version integer, agent_version integer, credential_version integer)
  ),
  unchanged as (
    select r.* from rows r
    join lateral (select status, expires_at from sessions where id = r.session_id limit 1) s on true
    join lateral (select policy_version from orgs where id = r.org_id limit 1) o on true
    join lateral (
      select deleted_at, version from credentials where org_id = r.org_id and ref = r.credential_ref limit 1
    ) c on true
    left join lateral (
      select status, version from agents where id = r.agent_id and org_id = r.org_id limit 1
    ) a on true
    left join lateral (
      select id, revoked_at, expires_at from api_keys
      where r.requested_by_type = 'api_key' and id = r.requested_by limit 1
    ) k on true
    where s.status = 'open' and s.expires_at > now() and o.policy_version = r.policy_version
      and c.deleted_at is null and c.version = r.credential_version
      and (r.agent_id is null or (a.status = 'active' and a.version = r.agent_version))
      and (r.requested_by_type <> 'api_key' or (k.id is not null
        and (k.revoked_at is null or k.revoked_at > now()) and (k.expires_at is null or k.expires_at > now())))
  ),
  inv as (
    insert into invocations (id, org_id, session_id, agent_id, requested_by_type, requested_by, status,
      model, provider, credential_ref, request, input_price_micros, output_price_micros, reserve_micros,
      reserve_tokens, decision, error, approval_id, request_id, created_at, updated_at, completed_at)
    select id, org_id, session_id, agent_id, requested_by_type, requested_by, status, model, provider,
      credential_ref, request, input_price_micros, output_price_micros, reserve_micros, reserve_tokens,
      decision, error, approval_id, request_id, created_at, decided_at,
      case when status in ('running', 'awaiting_approval') then null else decided_at end
    from unchanged
    returning id
  ),
  ${decisionRows('inv')}`,
);

/**
 * $1 decision writes JSON, $2 decisions JSON, $3 audit JSON, $4 approvals JSON. Only invocations in
 * a status of the guardian stage (lifecycle.ts) are decided. The expected statuses travel as data:
 * a literal would let a generic plan drive the update from the partial in-flight index (all
 * invocations in flight) instead of the batch's primary keys. An approval and its entries are
 * written only with the decision that opened it.
 */
export const DECIDE = statement(
  'decide',
  `
  with x as (
    select * from json_to_recordset($1::json) as x(
      invocation_id text, expected text[], status text, request jsonb, reserve_micros bigint,
      reserve_tokens bigint, decision jsonb, error jsonb, approval_id text, at timestamptz)
  ),
  u as (
    update invocations i set
      status = x.status,
      decision = x.decision,
      request = coalesce(x.request, i.request),
      reserve_micros = coalesce(x.reserve_micros, i.reserve_micros),
      reserve_tokens = coalesce(x.reserve_tokens, i.reserve_tokens),
      approval_id = coalesce(x.approval_id, i.approval_id),
      error = x.error,
      updated_at = x.at,
      completed_at = case when x.status in ('running', 'awaiting_approval') then null else x.at end
    from x
    where i.id = x.invocation_id and i.status = any(x.expected)
    returning i.id
  ),
  ${decisionRows('u')}`,
);

/**
 * $1 finish writes JSON, $2 audit JSON. The invocation's outcome (or, with status `running`, a
 * failed provider attempt before a retry), its charge added to what the invocation and its session
 * were charged (the session's CHECK constraints refuse anything past a cap), and the audit entry.
 * A write that ends a provider attempt applies only if that attempt was not recorded yet.
 */
export const FINISH = statement(
  'finish',
  `
  with x as (
    select * from json_to_recordset($1::json) as x(
      invocation_id text, from_statuses text[], status text, output jsonb, input_tokens bigint,
      output_tokens bigint, cost_micros bigint, charged_calls integer, provider_attempt integer,
      error jsonb, at timestamptz)
  ),
  u as (
    update invocations i set
      status = x.status,
      output = x.output,
      input_tokens = case when x.input_tokens is null then i.input_tokens
        else coalesce(i.input_tokens, 0) + x.input_tokens end,
      output_tokens = case when x.output_tokens is null then i.output_tokens
        else coalesce(i.output_tokens, 0) + x.output_tokens end,
      cost_micros = i.cost_micros + x.cost_micros,
      charged_calls = i.charged_calls + x.charged_calls,
      provider_attempts = coalesce(x.provider_attempt, i.provider_attempts),
      error = x.error,
      updated_at = x.at,
      completed_at = case when x.status = 'running' then null else x.at end
    from x
    where i.id = x.invocation_id and i.status = any(x.from_statuses)
      and (x.provider_attempt is null or i.provider_attempts = x.provider_attempt - 1)
    returning i.id, i.session_id, x.cost_micros, x.charged_calls, x.input_tokens, x.output_tokens
  ),
  charged as (
    select session_id, sum(cost_micros) as cost, sum(charged_calls) as calls,
      sum(coalesce(input_tokens, 0)) as input_tokens, sum(coalesce(output_tokens, 0)) as output_tokens
    from u group by session_id
    having sum(cost_micros) > 0 or sum(charged_calls) > 0
      or sum(coalesce(input_tokens, 0)) > 0 or sum(coalesce(output_tokens, 0)) > 0
  ),
  s as (
    update sessions s set
      cost_micros = s.cost_micros + charged.cost,
      calls = s.calls + charged.calls,
      input_tokens = s.input_tokens + charged.input_tokens,
      output_tokens = s.output_tokens + charged.output_tokens
    from charged
    where s.id = charged.session_id
  ),
  aud as (${INSERT_AUDIT} select * from ${auditRecordset('$2')} where a.resource_id in (select id from u))
  select coalesce(array_agg(id), '{}') as applied from u`,
);

/**
 * $1 ids. With what the guardian decides on: the agent, the session's status and the org's
 * policy_version (so the compiled policies are those of this read, without a second query); the
 * sealed credential, so an invocation admitted in the invoke job runs without reading again; and
 * when the API key that requested it is revoked or expires (either stops what has not been sent).
 */
export const FOR_GUARDIAN = statement(
  'for_guardian',
  `
  select i.*, s.status as session_status, s.expires_at as session_expires_at,
    a.id as gate_id, a.status as gate_status, a.allowed_models as gate_allowed_models,
    a.credential_refs as gate_credential_refs, o.policy_version as org_policy_version,
    c.ref as cred_ref, c.provider as cred_provider, c.base_url as cred_base_url,
    c.version as cred_version, c.sealed_secret as cred_sealed_secret, c.key_id as cred_key_id,
    k.revoked_at as requester_revoked_at, k.expires_at as requester_expires_at
  from invocations i
  join sessions s on s.id = i.session_id
  join orgs o on o.id = i.org_id
  left join agents a on a.id = i.agent_id and a.org_id = i.org_id
  left join credentials c on c.org_id = i.org_id and c.ref = i.credential_ref
  left join api_keys k on i.requested_by_type = 'api_key' and k.id = i.requested_by
  where i.id = any($1::text[])`,
);

/**
 * $1 ids. With the sealed credential the call needs (a deleted one has no secret) and, for an
 * invocation an approval resumed, the digest of the request that was approved.
 */
export const FOR_RUN = statement(
  'for_run',
  `
  select i.*, c.ref as cred_ref, c.provider as cred_provider, c.base_url as cred_base_url,
    c.version as cred_version, c.sealed_secret as cred_sealed_secret, c.key_id as cred_key_id,
    ap.request_digest as approved_digest
  from invocations i
  left join credentials c on c.org_id = i.org_id and c.ref = i.credential_ref
  left join approvals ap on ap.id = i.approval_id and ap.status = 'approved'
  where i.id = any($1::text[])`,
);

/** $1 ids. */
export const BY_IDS = statement('invocations_by_ids', `select * from invocations where id = any($1::text[])`);

/**
 * $1 JSON of queries `{i, org_id, session_id, agent_id, credential_ref, model}`. Everything
 * admission checks, for a batch of requests in one round trip, one row per query (`i`): the agent
 * defaults to the session's, the credential to the agent's first, the price is the org's own (the
 * built-in table is in code). With the org's policy_version and the sealed credential, an invoke
 * the API runs itself is decided on this read (decide-at-submit.ts). Each lookup is a lateral subquery with `limit 1` so it stays a
 * keyed lookup per query: a plain join could be planned as a scan of the whole table.
 */
export const INVOKE_CONTEXTS = statement(
  'invoke_contexts',
  `
  select q.i, row_to_json(s) as session, row_to_json(a) as agent, row_to_json(c) as credential,
    row_to_json(p) as price, (select policy_version from orgs where id = q.org_id) as policy_version
  from json_to_recordset($1::json) as q(i int, org_id text, session_id text, agent_id text,
    credential_ref text, model text)
  left join lateral (select * from sessions where org_id = q.org_id and id = q.session_id limit 1) s on true
  left join lateral (
    select id, status, allowed_models, credential_refs, version from agents
    where org_id = q.org_id and id = coalesce(q.agent_id, s.agent_id) limit 1
  ) a on true
  left join lateral (
    select ref, provider, deleted_at, base_url, version, sealed_secret, key_id from credentials
    where org_id = q.org_id and ref = coalesce(q.credential_ref, a.credential_refs[1]) limit 1
  ) c on true
  left join lateral (select * from model_prices where org_id = q.org_id and model = q.model limit 1) p on true`,
);

/** $1 session id, $2 the run stage's statuses. Settled usage and the in-flight reservations, in one snapshot. */
export const CAP_SNAPSHOT = statement(
  'cap_snapshot',
  `
  select s.max_cost_micros, s.max_calls, s.max_tokens, s.cost_micros, s.calls, s.input_tokens,
    s.output_tokens, s.expires_at,
    coalesce((
      select json_agg(json_build_object('id', i.id, 'attempts', i.provider_attempts, 'cost', i.reserve_micros,
        'tokens', i.reserve_tokens))
      from invocations i where i.session_id = s.id and i.status = any($2::text[])
    ), '[]'::json) as in_flight
  from sessions s where s.id = $1`,
);

/** Bindings (knex): org, session, org, session, after-at, after-at, after-id, limit. Oldest first. */
export const HISTORY = `
  select * from (
    select 'invocation' as kind, i.created_at as at, i.id, row_to_json(i) as row
    from invocations i where i.org_id = ? and i.session_id = ?
    union all
    select 'decision' as kind, d.evaluated_at as at, d.id, row_to_json(d) as row
    from decisions d where d.org_id = ? and d.session_id = ?
  ) h
  where ?::timestamptz is null or (h.at, h.id) > (?::timestamptz, ?::text)
  order by h.at, h.id
  limit ?`;
