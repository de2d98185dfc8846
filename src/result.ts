// The shapes of an answer that can be no, one type for each meaning (docs/architecture.md: Errors).
// `ok` tells the two sides apart; what each side carries besides is the caller's, so a type here
// names the meaning without renaming the fields its callers (and the wire) already read.

/** A check that passed, with what it found, or the sentence saying why not, logged and told to the
 * refused client as it is: the broker's ACL and connection limits, a channel join. */
export type Verdict<Found extends object = object, Refusal extends object = object> =
  | ({ ok: true } & Found)
  | ({ ok: false; reason: string } & Refusal);

/** Input read into what it means, or the message saying why it cannot be read (a 422's field error,
 * a 401's message, a log line): a timestamp, a gateway's status payload. */
export type Parsed<Read extends object> = ({ ok: true } & Read) | { ok: false; message: string };
