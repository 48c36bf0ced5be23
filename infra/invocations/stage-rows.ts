import type {
  GuardianView,
  InvokeContext,
  RunView,
  SealedCredential,
} from '../../domain/invocations/invocation-store';
import type { AgentGate } from '../../domain/policy/guardian';
import type { AgentStatus, ModelPrice } from '../../domain/model';
import type { Provider } from '../../domain/providers';
import { toSession, type SessionRow } from '../sessions/session-rows';
import { toInvocation, type InvocationRow } from './invocation-rows';

/** The rows of the invoke path's reads (invocation-sql.ts), and what each stage makes of them. */

export interface ContextRow {
  session: SessionRow | null;
  agent: {
    id: string;
    status: string;
    allowed_models: string[];
    credential_refs: string[];
    version: number;
  } | null;
  credential: {
    ref: string;
    provider: string;
    deleted_at: string | null;
    base_url: string | null;
    version: number;
    sealed_secret: string | null;
    key_id: string;
  } | null;
  price: {
    org_id: string;
    model: string;
    input_micros_per_mtok: number;
    output_micros_per_mtok: number;
    updated_at: string;
    updated_by: string;
  } | null;
  policy_version: number | string;
}

export const priceOf = (p: ContextRow['price']): ModelPrice | null =>
  p
    ? {
        orgId: p.org_id,
        model: p.model,
        inputMicrosPerMtok: Number(p.input_micros_per_mtok),
        outputMicrosPerMtok: Number(p.output_micros_per_mtok),
        updatedAt: new Date(p.updated_at),
        updatedBy: p.updated_by,
      }
    : null;

export interface GuardianRow extends CredentialRow {
  session_status: string;
  session_expires_at: Date | string;
  gate_id: string | null;
  gate_status: string | null;
  gate_allowed_models: string[] | null;
  gate_credential_refs: string[] | null;
  org_policy_version: number | string;
  requester_revoked_at: Date | string | null;
  requester_expires_at: Date | string | null;
}

/** An invocation with its sealed credential's columns (null when it is gone). */
interface CredentialRow extends InvocationRow {
  cred_ref: string | null;
  cred_provider: string | null;
  cred_base_url: string | null;
  cred_version: number | null;
  cred_sealed_secret: string | null;
  cred_key_id: string | null;
}

export interface RunRow extends CredentialRow {
  approved_digest: string | null;
}

const credentialOf = (r: CredentialRow): SealedCredential | null =>
  r.cred_ref
    ? {
        ref: r.cred_ref,
        provider: r.cred_provider as Provider,
        baseUrl: r.cred_base_url,
        version: r.cred_version ?? 0,
        sealedSecret: r.cred_sealed_secret,
        keyId: r.cred_key_id ?? '',
      }
    : null;

export const gateOf = (r: {
  id: string;
  status: string;
  allowed_models: string[];
  credential_refs: string[];
}): AgentGate => ({
  id: r.id,
  status: r.status as AgentStatus,
  allowedModels: r.allowed_models,
  credentialRefs: r.credential_refs,
});

export const toGuardianView = (r: GuardianRow): GuardianView => ({
  invocation: toInvocation(r),
  agent: r.gate_id
    ? gateOf({
        id: r.gate_id,
        status: r.gate_status ?? 'active',
        allowed_models: r.gate_allowed_models ?? [],
        credential_refs: r.gate_credential_refs ?? [],
      })
    : null,
  session: {
    status: r.session_status as GuardianView['session']['status'],
    expiresAt: new Date(r.session_expires_at),
  },
  policyVersion: Number(r.org_policy_version),
  credential: credentialOf(r),
  requesterRevokedAt: r.requester_revoked_at === null ? null : new Date(r.requester_revoked_at),
  requesterExpiresAt: r.requester_expires_at === null ? null : new Date(r.requester_expires_at),
});

export const toRunView = (r: RunRow): RunView => ({
  invocation: toInvocation(r),
  credential: credentialOf(r),
  approvedDigest: r.approved_digest,
});

export const toInvokeContext = (row: ContextRow | undefined): InvokeContext => ({
  session: row?.session ? toSession(row.session) : null,
  agent: row?.agent ? gateOf(row.agent) : null,
  credential: row?.credential
    ? {
        ref: row.credential.ref,
        provider: row.credential.provider as Provider,
        deleted: row.credential.deleted_at !== null,
        sealed: {
          ref: row.credential.ref,
          provider: row.credential.provider as Provider,
          baseUrl: row.credential.base_url,
          version: Number(row.credential.version),
          sealedSecret: row.credential.sealed_secret,
          keyId: row.credential.key_id,
        },
      }
    : null,
  orgPrice: priceOf(row?.price ?? null),
  policyVersion: Number(row?.policy_version ?? 0),
  agentVersion: row?.agent ? Number(row.agent.version) : null,
});
