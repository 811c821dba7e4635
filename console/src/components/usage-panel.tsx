import { useId, useState } from 'react';
import type { Granularity, Usage } from '../api/contract';
import { useLoad } from '../hooks';
import { LoadStatus } from './feedback';
import { ChannelCharts, ChannelTotals, UsageChart } from './usage-chart';

/** The ranges offered, as Unkey's and Auth0's dashboards offer them: each with the buckets that suit it. */
export const USAGE_RANGES = [
  { id: 'hour', label: 'Last hour', granularity: 'minute', minutes: 60 },
  { id: 'day', label: 'Last 24 hours', granularity: 'hour', minutes: 24 * 60 },
  { id: 'week', label: 'Last 7 days', granularity: 'hour', minutes: 7 * 24 * 60 },
  { id: 'month', label: 'Last 30 days', granularity: 'day', minutes: 30 * 24 * 60 },
] as const satisfies ReadonlyArray<{ id: string; label: string; granularity: Granularity; minutes: number }>;

export type UsageRange = (typeof USAGE_RANGES)[number];

/** What a usage route is asked: the range's buckets, ending now. */
export interface UsageRequest {
  granularity: Granularity;
  from: string;
}

export function usageRequest(range: UsageRange, now = Date.now()): UsageRequest {
  return { granularity: range.granularity, from: new Date(now - range.minutes * 60_000).toISOString() };
}

/** A choice of range, as radio buttons. */
export function RangePicker({ value, onChange }: { value: UsageRange; onChange: (range: UsageRange) => void }) {
  const name = useId();
  return (
    <fieldset className="range-picker">
      <legend className="visually-hidden">Time range</legend>
      {USAGE_RANGES.map((range) => (
        <label key={range.id} className={range.id === value.id ? 'selected' : undefined}>
          <input
            type="radio"
            name={name}
            value={range.id}
            checked={range.id === value.id}
            onChange={() => onChange(range)}
          />
          {range.label}
        </label>
      ))}
    </fieldset>
  );
}

/**
 * A credential's usage over time (docs/console.md#pages): a range, its totals per channel and the chart. `load` reads
 * the owner's or the organization's route.
 */
export function UsagePanel({
  title = 'Usage',
  label,
  load,
  cacheKey,
}: {
  title?: string;
  /** What the chart is of, for screen readers: "Key “deploy”". */
  label: string;
  load: (request: UsageRequest) => Promise<Usage>;
  /** Changes when `load` reads another credential. */
  cacheKey: string;
}) {
  const [range, setRange] = useState<UsageRange>(USAGE_RANGES[1]);
  const usage = useLoad(() => load(usageRequest(range)), `${cacheKey}/${range.id}`);
  return (
    <section className="panel usage-panel" aria-labelledby={`${cacheKey}-usage`}>
      <div className="page-heading">
        <h2 id={`${cacheKey}-usage`}>{title}</h2>
        <button type="button" className="button button-small" onClick={usage.reload}>
          Refresh
        </button>
      </div>
      <p className="hint">
        Successful and refused uses: exchanges at <code>POST /v1/token</code> and <code>POST /oauth/token</code>, and
        its tokens at forward auth and introspection. Counts are written every second or so.
      </p>
      <RangePicker value={range} onChange={setRange} />
      <LoadStatus loaded={usage} what="the usage" />
      {usage.data !== undefined && (
        <>
          <ChannelTotals usage={usage.data} />
          <UsageChart usage={usage.data} label={label} />
          <ChannelCharts usage={usage.data} label={label} />
        </>
      )}
    </section>
  );
}
