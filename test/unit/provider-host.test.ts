import { baseUrlProblem, isLocalName, isPrivateAddress } from '../../domain/credentials/provider-host';

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
    ['not a URL', 'api.openai.com'],
    ['another scheme', 'file:///etc/passwd'],
    ['user info', 'https://user:pass@api.example.com'],
    ['a query', 'https://api.example.com/v1?key=abc'],
  ])('refuses %s', (_label, url) => expect(baseUrlProblem(url, true)).not.toBeNull());
});
