import { randomBytes } from 'node:crypto';
import type { HttpClient } from './http-client';

export const uniqueEmail = (label = 'user') => `${label}-${randomBytes(5).toString('hex')}@example.test`;
export const PASSWORD = 'correct horse battery staple';

export interface SignedUpOrg {
  orgId: string;
  userId: string;
  email: string;
  sessionToken: string;
  adminKey: string;
  adminKeyId: string;
}

export async function signupOrg(http: HttpClient, orgName = 'Acme'): Promise<SignedUpOrg> {
  const email = uniqueEmail('owner');
  const res = await http.post<{
    org: { id: string };
    user: { id: string };
    session_token: string;
    api_key: { id: string; key: string };
  }>('/v1/orgs/signup', { org_name: orgName, email, password: PASSWORD });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    orgId: res.body.org.id,
    userId: res.body.user.id,
    email,
    sessionToken: res.body.session_token,
    adminKey: res.body.api_key.key,
    adminKeyId: res.body.api_key.id,
  };
}

export async function mintKey(http: HttpClient, adminKey: string, scopes: string[], name = 'test key') {
  const res = await http.post<{ id: string; key: string; scopes: string[] }>(
    '/v1/keys',
    { name, scopes },
    adminKey,
  );
  if (res.status !== 201) throw new Error(`mint failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}
