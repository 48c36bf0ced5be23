import { expandScopes, grants, PRESETS, scopesOfRole, SCOPES } from '../../domain/scopes';

describe('scopes', () => {
  it('has exactly the thirteen scopes of the contract', () => {
    expect(SCOPES).toHaveLength(13);
  });

  it('expands presets exactly as the contract says', () => {
    const reads = [
      'credentials:read',
      'agents:read',
      'sessions:read',
      'audit:read',
      'stats:read',
      'policies:read',
    ];
    expect([...PRESETS.read].sort()).toEqual([...reads].sort());
    expect([...expandScopes(['invoke'])].sort()).toEqual(['llm:invoke', 'acs:evaluate', ...reads].sort());
    expect(expandScopes(['admin'])).toEqual(['org:admin']);
  });

  it('refuses unknown scopes, empty lists and presets mixed with scopes', () => {
    expect(() => expandScopes([])).toThrow(/empty/);
    expect(() => expandScopes(['llm:fly'])).toThrow(/unknown scope/);
    expect(() => expandScopes(['read', 'llm:invoke'])).toThrow(/only entry/);
    expect(() => expandScopes(['read', 'read'])).toThrow(/only entry/);
  });

  it('drops duplicate scopes', () => {
    expect(expandScopes(['audit:read', 'audit:read'])).toEqual(['audit:read']);
  });

  it('lets org:admin imply every scope, and nothing else imply another', () => {
    for (const scope of SCOPES) expect(grants(['org:admin'], scope)).toBe(true);
    expect(grants(['llm:invoke'], 'audit:read')).toBe(false);
    expect(grants(['audit:read'], 'audit:read')).toBe(true);
  });

  it('maps roles to scopes', () => {
    expect(scopesOfRole('owner')).toEqual(['org:admin']);
    expect(scopesOfRole('approver')).toEqual([...PRESETS.read, 'policies:write']);
    expect(scopesOfRole('viewer')).toEqual([...PRESETS.read]);
  });
});
