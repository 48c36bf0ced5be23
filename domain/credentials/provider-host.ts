import { BlockList, isIP } from 'node:net';

/**
 * Addresses a credential's base_url may not reach unless the operator allows private provider
 * hosts: otherwise a key holder could make the workers call the cloud metadata service, the
 * database or anything else inside the network (SSRF).
 */
const PRIVATE = new BlockList();
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
  PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv6');

const LOCAL_NAMES =
  /^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$|\.(localhost|local|internal)$/i;

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is judged by the IPv4 address inside it. */
function unmapped(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return mapped?.[1] ?? ip;
}

export function isPrivateAddress(address: string): boolean {
  const ip = unmapped(address.replace(/^\[|\]$/g, ''));
  const family = isIP(ip);
  if (family === 0) return false;
  return PRIVATE.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** A host name that names this machine or the local network, before any DNS lookup. */
export const isLocalName = (host: string): boolean => LOCAL_NAMES.test(host.replace(/\.$/, ''));

/**
 * Why a provider base URL is refused, or null when it is acceptable. Public hosts need https;
 * loopback and private hosts (by literal address or local name) need the operator's opt-in, and
 * then plain http is accepted too (a local vLLM or Ollama rarely has a certificate). Names that
 * resolve to private addresses are caught again when the connection is made.
 */
export function baseUrlProblem(raw: string, allowPrivate: boolean): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must use https';
  if (url.username || url.password) return 'must not carry user info; store secrets in `secret`';
  if (url.search || url.hash) return 'must not carry a query or fragment';
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const isPrivate = isPrivateAddress(host) || isLocalName(host);
  if (isPrivate && !allowPrivate)
    return 'points at a loopback or private address; set CP_ALLOW_PRIVATE_PROVIDER_HOSTS=true to allow it';
  if (!isPrivate && url.protocol !== 'https:') return 'must use https for a public host';
  return null;
}
