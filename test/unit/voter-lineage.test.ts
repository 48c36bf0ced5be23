import { lineageOf, lineages, oneVoice, speaksFor, type KeyLink } from '../../domain/approvals/voter-lineage';

/**
 * The lines drawn between identities that vote on approvals: a rotation keeps the identity, a
 * minter stands behind what it minted, a person stands behind the keys they minted.
 */
const links = (...all: KeyLink[]) => new Map(all.map((l) => [l.id, l]));
const key = (id: string, createdBy: string | null, replaced: string | null = null): KeyLink => ({
  id,
  createdBy,
  replaced,
});

// usr_owner minted key_admin, which minted key_agent; key_agent was rotated twice (the second
// time by the owner) and its last version minted key_child.
const org = links(
  key('key_admin', 'usr_owner'),
  key('key_agent', 'key_admin'),
  key('key_agent2', 'key_agent', 'key_agent'),
  key('key_agent3', 'usr_owner', 'key_agent2'),
  key('key_child', 'key_agent3'),
  key('key_other', 'key_admin'),
);
const of = (id: string) => lineageOf(id, org);

describe('lineageOf', () => {
  it('names a rotated key by the first key of its line, and a person or an unknown id by itself', () => {
    expect(of('key_agent3').identity).toBe('key_agent');
    expect(of('key_agent').identity).toBe('key_agent');
    expect(of('key_child').identity).toBe('key_child');
    expect(of('usr_owner')).toEqual({ identity: 'usr_owner', behind: new Set(['usr_owner']) });
  });

  it('puts behind a key its rotation line and every minter up to the person', () => {
    expect([...of('key_child').behind].sort()).toEqual(
      ['key_admin', 'key_agent', 'key_agent2', 'key_agent3', 'key_child', 'usr_owner'].sort(),
    );
    expect([...of('key_other').behind].sort()).toEqual(['key_admin', 'key_other', 'usr_owner']);
  });

  it('ends on a cycle the data should never hold', () => {
    const looped = links(
      key('key_a', 'key_b'),
      key('key_b', 'key_a'),
      key('key_c', null, 'key_d'),
      key('key_d', null, 'key_c'),
    );
    expect([...lineageOf('key_a', looped).behind].sort()).toEqual(['key_a', 'key_b']);
    expect(lineageOf('key_c', looped).identity).toBe('key_d');
    expect([...lineageOf('key_c', looped).behind].sort()).toEqual(['key_c', 'key_d']);
  });
});

describe('who speaks for whom', () => {
  it('a key the requester minted, or any version of the requester, speaks for it', () => {
    expect(speaksFor(of('key_child'), of('key_agent'))).toBe(true);
    expect(speaksFor(of('key_agent'), of('key_agent3'))).toBe(true);
    expect(speaksFor(of('key_agent3'), of('key_agent'))).toBe(true);
    expect(speaksFor(of('key_admin'), of('usr_owner'))).toBe(true);
  });

  it('the minter of the requester does not: that is the human in the loop', () => {
    expect(speaksFor(of('key_admin'), of('key_agent'))).toBe(false);
    expect(speaksFor(of('usr_owner'), of('key_agent3'))).toBe(false);
    expect(speaksFor(of('key_other'), of('key_agent'))).toBe(false);
  });

  it("the key a signup returned is its holder's own identity: they cannot approve its requests, rotated or not", () => {
    // usr_founder signed up and got key_boot (rotated into key_boot2), which minted key_bot.
    const signup = links(
      { ...key('key_boot', 'usr_founder'), heldByCreator: true },
      key('key_boot2', 'usr_founder', 'key_boot'),
      key('key_bot', 'key_boot'),
    );
    const at = (id: string) => lineageOf(id, signup);
    expect(at('key_boot').identity).toBe('usr_founder');
    expect(at('key_boot2').identity).toBe('usr_founder');
    expect(speaksFor(at('usr_founder'), at('key_boot'))).toBe(true); // before: false
    expect(speaksFor(at('usr_founder'), at('key_boot2'))).toBe(true);
    expect(speaksFor(at('key_bot'), at('key_boot'))).toBe(true);
    // The keys it mints are handed to others: its holder is still the human in their loop.
    expect(speaksFor(at('usr_founder'), at('key_bot'))).toBe(false);
    expect(speaksFor(at('key_boot'), at('key_bot'))).toBe(false);
  });

  it('two voters are one voice when one came from the other, in either order; siblings are two', () => {
    expect(oneVoice(of('key_child'), of('key_agent'))).toBe(true);
    expect(oneVoice(of('key_agent'), of('key_child'))).toBe(true);
    expect(oneVoice(of('key_agent2'), of('key_agent3'))).toBe(true);
    expect(oneVoice(of('key_other'), of('key_agent'))).toBe(false);
  });

  it('lineages() reads one lineage per actor from a flat list of links', () => {
    const map = lineages(
      [
        { type: 'api_key', id: 'key_child' },
        { type: 'user', id: 'usr_owner' },
      ],
      [...org.values()],
    );
    expect(map.get('key_child')?.identity).toBe('key_child');
    expect(map.get('usr_owner')?.behind).toEqual(new Set(['usr_owner']));
  });
});
