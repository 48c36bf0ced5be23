import {
  baseUrlProblem,
  canonicalUrl,
  isLocalName,
  isPrivateAddress,
} from '../../domain/credentials/provider-host';

describe('provider base URLs (SSRF guard)', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.0.0.1',
    '172.16.5.4',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '[::1]',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:10.0.0.1',
  ])('treats %s as private', (ip) => expect(isPrivateAddress(ip)).toBe(true));

  // IPv6 forms that carry an IPv4 address reach that address: they are judged by it.
  it.each([
    ['IPv4-mapped, hex', '::ffff:7f00:1'],
    ['IPv4-mapped, dotted', '::ffff:169.254.169.254'],
    ['IPv4-mapped, as the URL parser writes it', '[::ffff:a00:1]'],
    ['IPv4-translated (SIIT)', '::ffff:0:7f00:1'],
    ['IPv4-compatible, dotted', '::127.0.0.1'],
    ['IPv4-compatible, hex', '::a9fe:a9fe'],
    ['NAT64', '64:ff9b::7f00:1'],
    ['NAT64, dotted', '64:ff9b::10.1.2.3'],
    ['6to4', '2002:7f00:1::1'],
    ['6to4 of a private network', '2002:c0a8:101::'],
  ])('treats %s %s as private', (_form, ip) => expect(isPrivateAddress(ip)).toBe(true));

  // Outside global unicast (2000::/3), or reserved inside it: nothing a provider lives at.
  it.each([
    ['site-local', 'fec0::1'],
    ['site-local, top of the range', 'feff:ffff::1'],
    ['local-use NAT64', '64:ff9b:1::a00:1'],
    ['discard-only', '100::1'],
    ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['documentation', '2001:db8::1'],
    ['with a zone index', 'fe80::1%eth0'],
  ])('treats %s %s as private', (_form, ip) => expect(isPrivateAddress(ip)).toBe(true));

  it.each(['64:ff9b::808:808', '2002:808:808::1', '::ffff:1.1.1.1', '2a00:1450:4001:80b::200e'])(
    'treats %s (a public IPv4 embedded, or global unicast) as public',
    (ip) => expect(isPrivateAddress(ip)).toBe(false),
  );

  it.each(['8.8.8.8', '172.32.0.1', '1.1.1.1', '2606:4700::1111', 'api.openai.com'])(
    'treats %s as public (or not an address)',
    (ip) => expect(isPrivateAddress(ip)).toBe(false),
  );

  it.each(['localhost', 'LOCALHOST', 'db.internal', 'printer.local', 'app.localhost', 'localhost.'])(
    'treats the name %s as local',
    (name) => expect(isLocalName(name)).toBe(true),
  );

  it('accepts https public hosts and refuses plain http to them, whatever the opt-in', () => {
    expect(baseUrlProblem('https://api.openai.com/v1', false)).toBeNull();
    expect(baseUrlProblem('http://api.openai.com/v1', false)).toMatch(/https/);
    expect(baseUrlProblem('http://api.openai.com/v1', true)).toMatch(/https/);
  });

  it('accepts private hosts, over http too, only with the opt-in', () => {
    expect(baseUrlProblem('http://127.0.0.1:11434/v1', false)).toMatch(/CP_ALLOW_PRIVATE_PROVIDER_HOSTS/);
    expect(baseUrlProblem('http://127.0.0.1:11434/v1', true)).toBeNull();
    expect(baseUrlProblem('http://localhost:8000/v1', true)).toBeNull();
    expect(baseUrlProblem('https://10.0.0.5/v1', true)).toBeNull();
  });

  it.each([
    'https://[::ffff:127.0.0.1]/v1',
    'https://[64:ff9b::169.254.169.254]/v1',
    'https://[::10.0.0.1]/v1',
    'https://[2002:a9fe:a9fe::]/v1',
    'https://[fec0::1]/v1',
  ])('refuses %s without the opt-in (an IPv6 spelling of a private address)', (url) =>
    expect(baseUrlProblem(url, false)).toMatch(/CP_ALLOW_PRIVATE_PROVIDER_HOSTS/),
  );

  it.each([
    ['not a URL', 'api.openai.com'],
    ['another scheme', 'file:///etc/passwd'],
    ['user info', 'https://user:pass@api.example.com'],
    ['a query', 'https://api.example.com/v1?key=abc'],
    ['nothing', ''],
    ['outer spaces', ' https://api.example.com/v1 '],
    ['a line break', 'https://api.example.com/v1\n'],
    ['a right-to-left override', 'https://api.example.com/v1/\u202e'],
    ['a zero-width space in the host', 'https://api.exa\u200bmple.com/v1'],
    ['port 0', 'https://api.example.com:0/v1'],
    ['a backslash, which reads as a slash', 'https://api.example.com\\@127.0.0.1/v1'],
    ['a bare question mark, after which the API path would go', 'https://api.example.com/v1?'],
    ['a bare hash, which would hide the API path', 'https://api.example.com/v1#'],
    ['an empty label', 'https://a..b.com/v1'],
    ['a path over 2048 characters once encoded', `https://api.example.com/${'😀'.repeat(200)}`],
    ['a leading empty label', 'https://.example.com/v1'],
    ['a label starting with a hyphen', 'https://-example.com/v1'],
    ['a label longer than 63', `https://${'a'.repeat(64)}.example.com/v1`],
    ['a host longer than 253', `https://${'abcdefghi.'.repeat(26)}com/v1`],
  ])('refuses %s', (_label, url) => expect(baseUrlProblem(url, true)).not.toBeNull());

  it('accepts a host name of 253 characters written with the root dot', () => {
    const name = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`;
    expect(name).toHaveLength(253);
    expect(baseUrlProblem(`https://${name}./v1`, false)).toBeNull();
    expect(baseUrlProblem(`https://${name}x./v1`, false)).not.toBeNull();
  });

  it.each([
    ['HTTPS://API.EXAMPLE.COM/v1', 'https://api.example.com/v1'],
    ['https://ａｐｉ.example.com/v1', 'https://api.example.com/v1'],
    ['https:api.example.com', 'https://api.example.com'],
    ['https://@api.example.com/', 'https://api.example.com/'],
    ['https://api.example.com:443/v1', 'https://api.example.com/v1'],
    ['https://bücher.example/v1', 'https://xn--bcher-kva.example/v1'],
    ['http://127.0.0.1:11434', 'http://127.0.0.1:11434'],
    ['https://api.example.com/v1/', 'https://api.example.com/v1/'],
  ])('stores %s as it is called: %s (QA)', (raw, called) => expect(canonicalUrl(raw)).toBe(called));

  it('accepts an international host name and a percent-encoded path', () => {
    expect(baseUrlProblem('https://bücher.example/v1/%E2%80%AE', false)).toBeNull();
    expect(baseUrlProblem(`https://${'a'.repeat(63)}.example.com/v1`, false)).toBeNull();
  });
});
