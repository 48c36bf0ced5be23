import { z } from 'zod';
import { ROLES } from '../../domain/scopes';
import { displayName, email, newPassword, timestamp } from './common';
import { KeyWithSecret } from './keys.schemas';

export const OrgSignupBody = z
  .object({ org_name: displayName, email, password: newPassword, name: displayName.optional() })
  .strict();

export const UserSignupBody = z
  .object({
    email,
    password: newPassword,
    name: displayName.optional(),
    invite_token: z.string().min(1).max(200),
  })
  .strict();

export const LoginBody = z
  .object({ email: z.string().max(254), password: z.string().min(1).max(1024) })
  .strict();

export const InviteBody = z.object({ email, role: z.enum(ROLES.filter((r) => r !== 'owner')) }).strict();

export const Org = z.object({ id: z.string(), name: z.string(), created_at: timestamp }).meta({ id: 'Org' });

export const User = z
  .object({ id: z.string(), email: z.string(), name: z.string().nullable(), role: z.enum(ROLES) })
  .meta({ id: 'User' });

export const OrgSignupResponse = z.object({
  org: Org,
  user: User,
  session_token: z.string(),
  api_key: KeyWithSecret,
});
export const UserSignupResponse = z.object({ user: User });
export const LoginResponse = z.object({ session_token: z.string(), expires_at: timestamp, user: User });
export const InviteResponse = z.object({ invite_token: z.string(), expires_at: timestamp });
