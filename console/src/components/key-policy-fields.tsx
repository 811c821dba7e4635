import { useId } from 'react';
import type { ApiKey } from '../api/contract';

/** What the two policy fields hold while edited: the allowlist's lines and the rate limit's two numbers, as typed. */
export interface KeyPolicyDraft {
  cidrs: string;
  requests: string;
  windowSeconds: string;
}

export function draftOf(key?: Pick<ApiKey, 'allowed_cidrs' | 'rate_limit'>): KeyPolicyDraft {
  return {
    cidrs: (key?.allowed_cidrs ?? []).join('\n'),
    requests: key?.rate_limit == null ? '' : String(key.rate_limit.requests),
    windowSeconds: key?.rate_limit == null ? '60' : String(key.rate_limit.window_seconds),
  };
}

/**
 * The body's `allowed_cidrs` and `rate_limit` (docs/api.md#allowlists-and-rate-limits): one CIDR or address per line
 * (none: any address, null), a rate limit when a number of requests is given (none: null). The server checks them.
 */
export function policiesOf(draft: KeyPolicyDraft): {
  allowed_cidrs: string[] | null;
  rate_limit: { requests: number; window_seconds: number } | null;
} {
  const cidrs = draft.cidrs
    .split(/[\s,]+/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return {
    allowed_cidrs: cidrs.length === 0 ? null : cidrs,
    rate_limit:
      draft.requests.trim() === ''
        ? null
        : { requests: Number(draft.requests), window_seconds: Number(draft.windowSeconds) },
  };
}

/** The allowlist and the rate limit of a key, for the create and edit forms. */
export function KeyPolicyFields({
  draft,
  onChange,
  allowlistRequired,
}: {
  draft: KeyPolicyDraft;
  onChange: (draft: KeyPolicyDraft) => void;
  allowlistRequired: boolean;
}) {
  const ids = { cidrs: useId(), cidrsHint: useId(), requests: useId(), window: useId() };
  return (
    <>
      <div className="field">
        <label htmlFor={ids.cidrs}>Allowed addresses</label>
        <textarea
          id={ids.cidrs}
          rows={3}
          value={draft.cidrs}
          required={allowlistRequired}
          aria-describedby={ids.cidrsHint}
          placeholder="e.g. 203.0.113.0/24"
          onChange={(event) => onChange({ ...draft, cidrs: event.target.value })}
        />
        <p className="hint" id={ids.cidrsHint}>
          One IPv4 or IPv6 CIDR or address per line, at most 100.{' '}
          {allowlistRequired
            ? 'Your organization requires a list, without /0.'
            : 'Empty: the key works from any address.'}
        </p>
      </div>
      <fieldset className="field">
        <legend>Rate limit</legend>
        <p className="hint">Empty: no limit. Counted at token exchanges and gateways that ask Gatehouse.</p>
        <label className="inline" htmlFor={ids.requests}>
          Requests
        </label>{' '}
        <input
          id={ids.requests}
          type="number"
          min={1}
          max={1_000_000}
          step={1}
          value={draft.requests}
          className="input-short"
          onChange={(event) => onChange({ ...draft, requests: event.target.value })}
        />{' '}
        <label className="inline" htmlFor={ids.window}>
          per<span className="visually-hidden"> (window in seconds)</span>
        </label>{' '}
        <input
          id={ids.window}
          type="number"
          min={1}
          max={86_400}
          step={1}
          required={draft.requests.trim() !== ''}
          value={draft.windowSeconds}
          className="input-short"
          onChange={(event) => onChange({ ...draft, windowSeconds: event.target.value })}
        />{' '}
        <span aria-hidden="true" data-testid="window-unit">
          {draft.windowSeconds.trim() === '1' ? 'second' : 'seconds'}
        </span>
      </fieldset>
    </>
  );
}
