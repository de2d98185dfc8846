import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

// Where the box may send webhooks (docs/webhooks-outgoing.md, "Receivers").
// The box sits on a venue LAN, so a subscription must not turn it into a way in: https only
// (plain http with webhook.allowInsecure), no loopback or link-local receiver unless allowed,
// never a cloud metadata address unless its network is listed in webhook.allowedNetworks.
// Private LAN ranges are allowed: venue systems live there. The name is checked as it is
// resolved for the connection itself (lookup() below, given to the HTTP client), so the
// address checked is the address connected to: a DNS answer that changes between a check and
// the connection (rebinding) cannot get past.

export interface ReceiverPolicyOptions {
  allowInsecure: boolean;
  allowedNetworks: readonly string[];
}

const METADATA = ['169.254.169.254/32', '100.100.100.200/32', 'fd00:ec2::254/128'];
const ALWAYS = ['0.0.0.0/8', '224.0.0.0/4', '255.255.255.255/32', '::/128', 'ff00::/8'];
const LOCAL = ['127.0.0.0/8', '169.254.0.0/16', '::1/128', 'fe80::/10'];

function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address, bits] = cidr.split('/');
    const family = isIP(address!) === 6 ? 'ipv6' : 'ipv4';
    list.addSubnet(address!, Number(bits ?? (family === 'ipv6' ? 128 : 32)), family);
  }
  return list;
}

/** An IPv4-mapped IPv6 address (::ffff:10.0.0.5) is checked as the IPv4 address it is. */
const unmapped = (address: string): string =>
  /^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(address) ? address.slice(7) : address;

export class ReceiverPolicy {
  readonly #refused: BlockList;
  readonly #allowed: BlockList;

  constructor(private readonly options: ReceiverPolicyOptions) {
    this.#refused = blockListOf([...METADATA, ...ALWAYS, ...(options.allowInsecure ? [] : LOCAL)]);
    this.#allowed = blockListOf(options.allowedNetworks);
  }

  /** Checks a receiver URL as given (create, update): null when acceptable, else why not. */
  urlProblem(text: string): string | null {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'The url must be an absolute URL.';
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.options.allowInsecure)) {
      return this.options.allowInsecure
        ? 'The url must use https or http.'
        : 'The url must use https (plain http needs webhook.allowInsecure).';
    }
    if (url.username || url.password) return 'The url must not carry credentials.';
    if (url.hash) return 'The url must not have a fragment.';
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && this.addressProblem(host))
      return `The url's address ${host} is not allowed (${this.addressProblem(host)}).`;
    if (!isIP(host) && (host === 'localhost' || host.endsWith('.localhost')) && !this.options.allowInsecure)
      return 'The url must not name this box (localhost).';
    return null;
  }

  /** Why the box may not connect to this address, or null when it may. */
  addressProblem(raw: string): string | null {
    const address = unmapped(raw);
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (this.#allowed.check(address, family)) return null;
    if (!this.#refused.check(address, family)) return null;
    return blockListOf(METADATA).check(address, family)
      ? 'a cloud metadata address'
      : 'a loopback, link-local, multicast or unspecified address';
  }

  /**
   * A dns.lookup for the HTTP client's connections: resolves as usual and refuses the
   * connection when an address the name resolves to is not allowed.
   */
  readonly lookup = (
    hostname: string,
    options: { all?: boolean; family?: number } | number,
    callback: (...args: unknown[]) => void,
  ): void => {
    const opts = typeof options === 'number' ? { family: options } : options;
    dnsLookup(hostname, { ...opts, all: true, verbatim: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const refused = addresses.find((a) => this.addressProblem(a.address));
      if (refused) {
        const error = Object.assign(
          new Error(
            `receiver ${hostname} resolves to ${refused.address}: ${this.addressProblem(refused.address)}, not allowed`,
          ),
          { code: 'EADDRNOTALLOWED' },
        );
        return callback(error);
      }
      if (opts.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
