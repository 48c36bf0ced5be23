import { BlockList, isIP } from 'node:net';

/**
 * Addresses a credential's base_url may not reach unless the operator allows private provider
 * hosts: otherwise a key holder could make the workers call the cloud metadata service, the
 * database or anything else inside the network (SSRF).
 */
const PRIVATE_V4 = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const)
  PRIVATE_V4.addSubnet(net, bits, 'ipv4');

/**
 * IPv6 is allowed only in global unicast (2000::/3), which leaves out loopback, unique local,
 * link-local, site-local (fec0::/10), multicast and whatever is assigned later.
 */
const GLOBAL_V6 = new BlockList();
GLOBAL_V6.addSubnet('2000::', 3, 'ipv6');
/** Inside global unicast, ranges that are not a provider's address. */
const RESERVED_V6 = new BlockList();
for (const [net, bits] of [
  ['2001::', 23], // IETF protocol assignments, Teredo (2001::/32) among them
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
] as const)
  RESERVED_V6.addSubnet(net, bits, 'ipv6');

const LOCAL_NAMES =
  /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.(localhost|local|internal)$/i;

type Groups = [number, number, number, number, number, number, number, number];

/** The eight 16-bit groups of an address isIP accepted as IPv6 (its zone index already dropped). */
function ipv6Groups(ip: string): Groups {
  let text = ip;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const before = parse(head);
  const after = tail === undefined ? [] : parse(tail);
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after] as Groups;
}

const ipv4Of = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;

/**
 * The IPv4 address an IPv6 address reaches, for the forms that carry one: IPv4-compatible
 * (::/96), IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96)
 * and 6to4 (2002::/16). Such an address is as private as the IPv4 address inside it.
 */
function embeddedIpv4([g0, g1, g2, g3, g4, g5, g6, g7]: Groups): string | null {
  if ((g0 | g1 | g2 | g3) === 0) {
    const compatibleOrMapped = g4 === 0 && (g5 === 0 || g5 === 0xffff);
    const translated = g4 === 0xffff && g5 === 0;
    if (compatibleOrMapped || translated) return ipv4Of(g6, g7);
  }
  if (g0 === 0x64 && g1 === 0xff9b && (g2 | g3 | g4 | g5) === 0) return ipv4Of(g6, g7);
  if (g0 === 0x2002) return ipv4Of(g1, g2);
  return null;
}

function isPrivateIpv6(ip: string): boolean {
  const inside = embeddedIpv4(ipv6Groups(ip));
  if (inside !== null) return PRIVATE_V4.check(inside, 'ipv4');
  return !GLOBAL_V6.check(ip, 'ipv6') || RESERVED_V6.check(ip, 'ipv6');
}

export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(ip);
  if (family === 0) return false;
  return family === 4 ? PRIVATE_V4.check(ip, 'ipv4') : isPrivateIpv6(ip);
}

/** A host name that names this machine or the local network, before any DNS lookup. */
export const isLocalName = (host: string): boolean => LOCAL_NAMES.test(host.replace(/\.$/, ''));

/**
 * Whether a host name is one DNS can have (an address literal aside): at most 253 characters
 * without the root's dot, each label 1 to 63, none starting or ending with a hyphen (QA:
 * `a..b.com`, `-example.com`).
 */
function dnsName(hostname: string): boolean {
  if (hostname.startsWith('[') || isIP(hostname) !== 0) return true;
  const name = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
  return (
    name.length <= 253 &&
    name.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i.test(label))
  );
}

/**
 * A base URL or receiver URL as it is called: the parser's form (lower-case scheme and host,
 * punycode, no default port, no empty user info), so that what is stored and shown is what is
 * called (QA: `https://ｅｘａｍｐｌｅ.com/`, `https:example.com`, `https://@example.com/`). A URL
 * written without a path keeps none. Only for a URL baseUrlProblem accepts.
 */
export function canonicalUrl(raw: string): string {
  const { href, pathname } = new URL(raw);
  return pathname === '/' && !raw.endsWith('/') ? href.slice(0, -1) : href;
}

/**
 * Why a provider base URL is refused, or null when it is acceptable. Public hosts need https;
 * loopback and private hosts (by literal address or local name) need the operator's opt-in, and
 * then plain http is accepted too (a local vLLM or Ollama rarely has a certificate). Names that
 * resolve to private addresses are caught again when the connection is made.
 */
export function baseUrlProblem(
  raw: string,
  allowPrivate: boolean,
  /** The operator's setting that allows private hosts, for the message. */
  optIn = 'CP_ALLOW_PRIVATE_PROVIDER_HOSTS',
): string | null {
  // The URL parser drops outer spaces and keeps format characters (U+202E turns how the rest
  // reads): what is stored is the parser's form (canonicalUrl), and these have none (QA).
  if (/[\s\p{C}]/u.test(raw)) return 'must not contain spaces, control or format characters';
  // The parser reads one as "/": `https://api.example.com\@127.0.0.1` calls api.example.com (QA).
  if (raw.includes('\\')) return 'must not contain a backslash';
  // A bare "?" or "#" leaves the parser's query empty, yet the API path would follow it (QA:
  // `/v1?` called `/v1?/chat/completions`).
  if (/[?#]/.test(raw)) return 'must not carry a query or fragment';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.username || url.password) return 'must not carry user info; store secrets in `secret`';
  if (url.search || url.hash) return 'must not carry a query or fragment';
  if (url.port === '0') return 'must not name port 0';
  if (!dnsName(url.hostname))
    return 'must name a host DNS can have: labels of 1 to 63 letters, digits or hyphens (not at either end), 253 characters in all';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const isPrivate = isPrivateAddress(host) || isLocalName(host);
  if (isPrivate && !allowPrivate)
    return `points at a loopback or private address; set ${optIn}=true to allow it`;
  if (!isPrivate && url.protocol !== 'https:') return 'must use https for a public host';
  // Stored as called, percent-encoded: 1,000 emoji of path are 12,000 characters (QA).
  if (url.href.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters once encoded`;
  return null;
}

/** What a base URL or receiver URL may take, as typed and as stored. */
export const MAX_URL_LENGTH = 2048;
