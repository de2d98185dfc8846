// What callApi rejects with (call-api.ts): why, and for an answered error the appliance's status,
// message and field errors (docs/plugins.md "callApi").

export type PluginApiErrorCode =
  | 'unknown_dependency'
  | 'unknown_operation'
  | 'invalid_operation'
  | 'missing_parameter'
  | 'list_too_long'
  | 'network'
  | 'api';

export class PluginApiError extends Error {
  constructor(
    readonly code: PluginApiErrorCode,
    message: string,
    /** The HTTP status for `api` errors; 0 when no request was made or none answered. */
    readonly status = 0,
    /** Field errors of a 422 (`{field: [messages]}`). */
    readonly errors: Record<string, string[]> = {},
    /** The answer's body, as sent. */
    readonly body: unknown = null,
  ) {
    super(message);
    this.name = 'PluginApiError';
  }
}
