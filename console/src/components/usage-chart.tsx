import { type KeyboardEvent, type PointerEvent, useId, useState } from 'react';
import type { Granularity, Usage, UsageBucket, UsageChannels } from '../api/contract';

/** How each way of use is named on screen (docs/api.md#usage-over-time). */
export const CHANNEL_NAMES: Record<keyof UsageChannels, string> = {
  key_exchange: 'Key exchange (POST /v1/token)',
  oauth_token: 'OAuth token (POST /oauth/token)',
  forward_auth: 'Forward auth',
  introspection: 'Introspection',
};

const CHANNELS = Object.keys(CHANNEL_NAMES) as Array<keyof UsageChannels>;

const TIME: Record<Granularity, Intl.DateTimeFormat> = {
  minute: new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }),
  hour: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }),
  day: new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' }),
};
const SPAN: Record<Granularity, string> = { minute: 'minute', hour: 'hour', day: 'day' };

const count = new Intl.NumberFormat();

/** A bucket's first instant as the axis and the readout show it. */
export function bucketTime(start: string, granularity: Granularity): string {
  return TIME[granularity].format(new Date(start));
}

/**
 * The y axis' top: the busiest bucket rounded up to 1, 2 or 5 times a power of ten, or to an even number up to 10, so
 * that its half, the middle line, is a whole count.
 */
function niceMax(value: number): number {
  if (value <= 10) return Math.max(2, Math.ceil(value / 2) * 2);
  const power = 10 ** Math.floor(Math.log10(value));
  return ([1, 2, 5, 10].find((step) => step * power >= value) ?? 10) * power;
}

function ChannelCounts({ channels }: { channels: UsageChannels }) {
  const used = CHANNELS.filter((channel) => channels[channel] !== undefined);
  if (used.length === 0) return null;
  const parts = used.map(
    (channel) =>
      `${CHANNEL_NAMES[channel]}: ${count.format(channels[channel]!.succeeded)} successful, ` +
      `${count.format(channels[channel]!.refused)} refused`,
  );
  return <span className="usage-readout-channels"> {parts.join(' · ')}</span>;
}

/**
 * Successful and refused uses per bucket as stacked bars, drawn in inline SVG (no chart library): refused on top of
 * successful. Pointing at a bar (or focusing the chart and moving with the arrow keys) shows its counts in the readout
 * above it; the same figures are in the table below, for screen readers and for copying.
 */
export function UsageChart({ usage, label, compact = false }: { usage: Usage; label: string; compact?: boolean }) {
  const [active, setActive] = useState<number>();
  const { buckets, granularity } = usage;
  const top = niceMax(Math.max(0, ...buckets.map((bucket) => bucket.succeeded + bucket.refused)));
  const n = buckets.length;
  const shown: UsageBucket | undefined = active === undefined ? undefined : buckets[active];

  const point = (event: PointerEvent<SVGSVGElement>) => {
    const box = event.currentTarget.getBoundingClientRect();
    const index = Math.floor(((event.clientX - box.left) / box.width) * n);
    setActive(Math.min(n - 1, Math.max(0, index)));
  };
  const move = (event: KeyboardEvent<SVGSVGElement>) => {
    const steps: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, Home: -n, End: n };
    const step = steps[event.key];
    if (step === undefined) return;
    event.preventDefault();
    setActive((current) => Math.min(n - 1, Math.max(0, (current ?? (step > 0 ? -1 : n)) + step)));
  };
  const ticks = n <= 1 ? [0] : [0, Math.floor((n - 1) / 2), n - 1];

  return (
    <figure className={compact ? 'usage-chart usage-chart-compact' : 'usage-chart'}>
      <p className="usage-readout" aria-live="polite" data-testid="usage-readout">
        {shown === undefined ? (
          compact ? (
            <span className="muted">
              {count.format(usage.succeeded)} successful · {count.format(usage.refused)} refused in this range
            </span>
          ) : (
            <span className="muted">Point at a bar, or focus the chart and use the arrow keys, to see its counts.</span>
          )
        ) : (
          <>
            <strong>
              {bucketTime(shown.start, granularity)}
              <span className="visually-hidden"> ({SPAN[granularity]})</span>
            </strong>{' '}
            <span className="usage-succeeded-text">{count.format(shown.succeeded)} successful</span>
            {' · '}
            <span className="usage-refused-text">{count.format(shown.refused)} refused</span>
            <ChannelCounts channels={shown.channels} />
          </>
        )}
      </p>
      <div className="usage-plot">
        <div className="usage-y-axis" aria-hidden="true">
          <span>{count.format(top)}</span>
          <span>{count.format(top / 2)}</span>
          <span>0</span>
        </div>
        <svg
          viewBox={`0 0 ${n} 100`}
          preserveAspectRatio="none"
          role="img"
          aria-label={`${label}: ${count.format(usage.succeeded)} successful and ${count.format(usage.refused)} refused uses, per ${SPAN[granularity]}`}
          tabIndex={0}
          onPointerMove={point}
          onPointerDown={point}
          onPointerLeave={(event) => {
            if (event.pointerType === 'mouse') setActive(undefined);
          }}
          onKeyDown={move}
          onBlur={() => setActive(undefined)}
        >
          <line x1="0" x2={n} y1="0" y2="0" className="usage-grid" vectorEffect="non-scaling-stroke" />
          <line x1="0" x2={n} y1="50" y2="50" className="usage-grid" vectorEffect="non-scaling-stroke" />
          <line x1="0" x2={n} y1="100" y2="100" className="usage-axis" vectorEffect="non-scaling-stroke" />
          {active !== undefined && <rect x={active} y="0" width="1" height="100" className="usage-active" />}
          {buckets.map((bucket, i) => {
            const succeeded = (bucket.succeeded / top) * 100;
            const refused = (bucket.refused / top) * 100;
            // A thin gap between bars while they are wide enough to show one.
            const [x, width] = n > 120 ? [i, 1] : [i + 0.12, 0.76];
            return (
              <g key={bucket.start}>
                {bucket.succeeded > 0 && (
                  <rect x={x} y={100 - succeeded} width={width} height={succeeded} className="usage-succeeded" />
                )}
                {bucket.refused > 0 && (
                  <rect x={x} y={100 - succeeded - refused} width={width} height={refused} className="usage-refused" />
                )}
              </g>
            );
          })}
        </svg>
        <span />
        <div className="usage-x-axis" aria-hidden="true">
          {ticks.map((i) => (
            <span key={i}>{buckets[i] === undefined ? '' : bucketTime(buckets[i].start, granularity)}</span>
          ))}
        </div>
      </div>
      <figcaption className="usage-legend">
        <span className="usage-key usage-key-succeeded">Successful</span>
        <span className="usage-key usage-key-refused">Refused</span>
        {!compact && <span className="muted">Times in your time zone; one bar per {SPAN[granularity]}.</span>}
      </figcaption>
      <details className="usage-table">
        <summary>Show the counts as a table</summary>
        <UsageTable usage={usage} />
      </details>
    </figure>
  );
}

const NONE = { succeeded: 0, refused: 0 };

/** The usage of one channel alone: its totals and its counts in each bucket (0 where it had none). */
export function ofChannel(usage: Usage, channel: keyof UsageChannels): Usage {
  return {
    ...usage,
    ...(usage.channels[channel] ?? NONE),
    channels: {},
    buckets: usage.buckets.map((bucket) => ({ ...bucket, ...(bucket.channels[channel] ?? NONE), channels: {} })),
  };
}

/**
 * One small chart per channel the range used, when it used more than one: each channel's successes and refusals apart
 * (a key refused at forward auth while its exchanges succeed shows as such), on a scale of its own.
 */
export function ChannelCharts({ usage, label }: { usage: Usage; label: string }) {
  const headingId = useId();
  const used = CHANNELS.filter((channel) => usage.channels[channel] !== undefined);
  if (used.length < 2) return null;
  return (
    <section className="usage-channels" aria-labelledby={headingId}>
      <h3 id={headingId}>Per channel</h3>
      <div className="usage-channel-grid">
        {used.map((channel) => (
          <section key={channel} aria-label={CHANNEL_NAMES[channel]} data-testid={`usage-channel-${channel}`}>
            <h4>{CHANNEL_NAMES[channel]}</h4>
            <UsageChart usage={ofChannel(usage, channel)} label={`${label}, ${CHANNEL_NAMES[channel]}`} compact />
          </section>
        ))}
      </div>
    </section>
  );
}

/** The buckets with a use, newest first. */
function UsageTable({ usage }: { usage: Usage }) {
  const used = usage.buckets.filter((bucket) => bucket.succeeded + bucket.refused > 0).reverse();
  if (used.length === 0) return <p className="muted">No uses in this range.</p>;
  return (
    <div className="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">{usage.granularity === 'day' ? 'Day' : 'From'}</th>
            <th scope="col">Successful</th>
            <th scope="col">Refused</th>
          </tr>
        </thead>
        <tbody>
          {used.map((bucket) => (
            <tr key={bucket.start}>
              <th scope="row">
                <time dateTime={bucket.start}>{bucketTime(bucket.start, usage.granularity)}</time>
              </th>
              <td>{count.format(bucket.succeeded)}</td>
              <td>{count.format(bucket.refused)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The range's totals per channel. */
export function ChannelTotals({ usage }: { usage: Usage }) {
  const used = CHANNELS.filter((channel) => usage.channels[channel] !== undefined);
  return (
    <dl className="usage-totals">
      <div>
        <dt>Successful</dt>
        <dd data-testid="usage-succeeded">{count.format(usage.succeeded)}</dd>
      </div>
      <div>
        <dt>Refused</dt>
        <dd data-testid="usage-refused">{count.format(usage.refused)}</dd>
      </div>
      {used.map((channel) => (
        <div key={channel}>
          <dt>{CHANNEL_NAMES[channel]}</dt>
          <dd>
            {count.format(usage.channels[channel]!.succeeded)}
            <span className="muted"> / {count.format(usage.channels[channel]!.refused)} refused</span>
          </dd>
        </div>
      ))}
    </dl>
  );
}
