/** A refusal of a `gatehouse` command, said on one line of stderr with exit code 2 (src/main.ts):
 * what the operator typed or chose, never a bug (those print their stack). */
export class CliError extends Error {}
