import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { BatchedWrites } from '../database/usage-recorder';
import { UnitOfWork } from '../database/unit-of-work';
import type { UsageChannel } from './credential-usage.entity';
import { CredentialUsageRepository, UsageRecord } from './credential-usage.repository';

/** One minute of one channel of a credential, counted in memory. */
interface UsageCell {
  minute: number;
  channel: UsageChannel;
  succeeded: number;
  refused: number;
}

/** A credential's counts not written yet. */
export interface PendingUsage {
  kind: string;
  organizationId: string;
  cells: UsageCell[];
}

/**
 * Cells kept across failed writes at most (about 100 bytes each): past it, a database away for long loses the counts of
 * the batches that failed rather than the process its memory.
 */
const MAX_KEPT_CELLS = 100_000;

/**
 * Usage over time without a write per use (docs/api.md#usage-over-time, docs/adr/0058-usage-over-time.md): each use is
 * an increment of a count in memory, per credential, minute, channel and outcome; the counts are added to the stored
 * ones every USAGE_FLUSH_MS (10 s) and at shutdown, as the usage fields are (BatchedWrites), in one transaction
 * per batch (an upsert per 500 rows, per minute and per hour). A crash loses the batch not yet written.
 */
@Injectable()
export class CredentialUsageCounter extends BatchedWrites<PendingUsage> {
  private keptCells = 0;

  constructor(
    @InjectConfig() config: AppConfiguration,
    private readonly usage: CredentialUsageRepository,
    private readonly unitOfWork: UnitOfWork,
  ) {
    super(CredentialUsageCounter.name, config.apiKeys.usageFlushMs, 'usage counts');
  }

  /**
   * One use of an identified credential of `kind` (its audit target type), successful or refused: the hot path's whole
   * cost, a lookup and an increment (an allocation only for the first use of a minute and channel).
   */
  count(
    kind: string,
    id: string,
    organizationId: string,
    channel: UsageChannel,
    succeeded: boolean,
    nowMs = Date.now(),
  ): void {
    const cell = this.cell(kind, id, organizationId, Math.floor(nowMs / 60_000), channel);
    if (succeeded) cell.succeeded += 1;
    else cell.refused += 1;
  }

  protected async write(batch: Array<[string, PendingUsage]>): Promise<void> {
    const rows: UsageRecord[] = [];
    for (const [id, { kind, organizationId, cells }] of batch) {
      for (const cell of cells) {
        rows.push({
          credential_id: id,
          minute: cell.minute,
          channel: cell.channel,
          credential_kind: kind,
          organization_id: organizationId,
          succeeded: cell.succeeded,
          refused: cell.refused,
        });
      }
    }
    await this.unitOfWork.run((tx) => this.usage.add(rows, tx));
    this.keptCells = 0;
  }

  /** A failed batch's counts, added to those counted since, while fewer than MAX_KEPT_CELLS have been kept. */
  protected restore(id: string, entry: PendingUsage): void {
    if (this.keptCells + entry.cells.length > MAX_KEPT_CELLS) {
      this.logger.warn({ credential: id, cells: entry.cells.length }, 'usage counts dropped: too many kept unwritten');
      return;
    }
    this.keptCells += entry.cells.length;
    for (const kept of entry.cells) {
      const cell = this.cell(entry.kind, id, entry.organizationId, kept.minute, kept.channel);
      cell.succeeded += kept.succeeded;
      cell.refused += kept.refused;
    }
  }

  /** The pending cell of the credential's minute and channel, made if missing (the newest are last). */
  private cell(kind: string, id: string, organizationId: string, minute: number, channel: UsageChannel): UsageCell {
    let pending = this.pending.get(id);
    if (pending === undefined) {
      pending = { kind, organizationId, cells: [] };
      this.pending.set(id, pending);
    }
    const { cells } = pending;
    for (let i = cells.length - 1; i >= 0; i -= 1) {
      if (cells[i].minute === minute && cells[i].channel === channel) return cells[i];
    }
    const cell = { minute, channel, succeeded: 0, refused: 0 };
    cells.push(cell);
    return cell;
  }
}
