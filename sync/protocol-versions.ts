import { SIGNED_CREDENTIALS_PROTOCOL } from '../src/http/sync-protocol-version.js';
import type { UploadedAccessEvent, UploadedChange } from './protocol.js';

// What an upload may carry in each protocol version (docs/sync.md: protocol versions), declared
// once for both ends: the edge leaves out what the version it agreed with an older cloud does not
// have (inUploadOf), and a cloud refuses a batch that names a version without them yet carries
// them (beyondUploadOf), as the older cloud itself would have.

type Item = UploadedAccessEvent | UploadedChange;

/** The reason details of a signed value, which protocol 1 does not have. */
const SIGNED_REASON_DETAILS: ReadonlySet<string> = new Set([
  'signature_invalid',
  'unknown_key',
  'key_retired',
  'verification_busy',
]);

const hasSigned = (protocol: number) => protocol >= SIGNED_CREDENTIALS_PROTOCOL;

/** The items as `protocol` has them: an older version's upload without the fields it lacks. */
export function inUploadOf(items: readonly Item[], protocol: number): Item[] {
  if (hasSigned(protocol)) return items as Item[];
  return items.map((item) => {
    if (item.kind !== 'access') return item;
    const { offline_verified: _verified, reason_detail, ...rest } = item;
    // An invalid_credential of a signed value is still one: only which cause it was is left out.
    return reason_detail === undefined || reason_detail === null || SIGNED_REASON_DETAILS.has(reason_detail)
      ? rest
      : { ...rest, reason_detail };
  });
}

/** The paths of the fields in `items` that `protocol` does not have, with what is wrong with each. */
export function beyondUploadOf(items: readonly Item[], protocol: number): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  if (hasSigned(protocol)) return errors;
  items.forEach((item, i) => {
    if (item.kind !== 'access') return;
    if (item.offline_verified !== undefined)
      errors[`items.${i}.offline_verified`] = [`offline_verified is in sync protocol ${SIGNED_CREDENTIALS_PROTOCOL}`];
    if (item.reason_detail && SIGNED_REASON_DETAILS.has(item.reason_detail))
      errors[`items.${i}.reason_detail`] = [
        `${item.reason_detail} is a reason detail of sync protocol ${SIGNED_CREDENTIALS_PROTOCOL}`,
      ];
  });
  return errors;
}
