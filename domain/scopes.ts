import { invalidField } from './errors';

/** Exactly the thirteen scopes of the contract. */
export const SCOPES = [
  'credentials:read',
  'credentials:write',
  'agents:read',
  'agents:write',
  'sessions:read',
  'sessions:write',
  'llm:invoke',
  'acs:evaluate',
  'audit:read',
  'stats:read',
  'policies:read',
  'policies:write',
  'org:admin',
] as const;

export type Scope = (typeof SCOPES)[number];

const READ_SCOPES: Scope[] = SCOPES.filter((s) => s.endsWith(':read'));

export const PRESETS = {
  read: READ_SCOPES,
  invoke: ['llm:invoke', 'acs:evaluate', ...READ_SCOPES] as Scope[],
  admin: ['org:admin'] as Scope[],
} as const satisfies Record<string, Scope[]>;

export type PresetName = keyof typeof PRESETS;

export const ROLES = ['owner', 'admin', 'approver', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const ROLE_SCOPES: Record<Role, Scope[]> = {
  owner: ['org:admin'],
  admin: ['org:admin'],
  approver: [...PRESETS.read, 'policies:write'],
  viewer: [...PRESETS.read],
};

export const scopesOfRole = (role: Role): Scope[] => ROLE_SCOPES[role];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);

const isPreset = (value: string): value is PresetName => Object.hasOwn(PRESETS, value);

/**
 * Turns the `scopes` of a key request into the scopes stored on the key: either scope strings
 * or exactly one preset name, never a mix. Duplicates are dropped; order follows SCOPES.
 */
export function expandScopes(requested: readonly string[]): Scope[] {
  if (requested.length === 0) throw invalidField('scopes', 'scopes must not be empty');
  const [first] = requested;
  if (requested.length === 1 && first !== undefined && isPreset(first)) return [...PRESETS[first]];
  requested.forEach((value, i) => {
    if (isPreset(value)) throw invalidField(`scopes.${i}`, `preset "${value}" must be the only entry`);
    if (!isScope(value)) throw invalidField(`scopes.${i}`, `unknown scope "${value}"`);
  });
  return SCOPES.filter((s) => requested.includes(s));
}

/** org:admin implies every scope. */
export const grants = (held: readonly string[], required: Scope): boolean =>
  held.includes('org:admin') || held.includes(required);
