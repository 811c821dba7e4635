/** Most items one transaction takes; a larger turn's items go in several. */
export const MAX_GROUP = 64;

interface Waiting<Item, Result> {
  item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

/**
 * Writes of one event-loop turn committed together (group commit, docs/adr/0061-code-and-refresh-cost.md):
 * `commit` runs every item of a group in one transaction, in order, and answers each. A group whose transaction
 * fails is rolled back whole and each of its items tried again alone, so that one failing item fails no other.
 * `commit` must give each item the outcome it would have had alone after the items before it (as separate
 * transactions in that order would).
 */
export function groupCommitted<Item, Result>(
  commit: (items: readonly Item[]) => Promise<Result[]>,
): (item: Item) => Promise<Result> {
  let waiting: Array<Waiting<Item, Result>> = [];
  const settle = async (group: Array<Waiting<Item, Result>>): Promise<void> => {
    let results: Result[];
    try {
      results = await commit(group.map((entry) => entry.item));
    } catch (error) {
      if (group.length === 1) {
        group[0].reject(error);
        return;
      }
      for (const entry of group) await settle([entry]);
      return;
    }
    group.forEach((entry, i) => entry.resolve(results[i]));
  };
  const flush = (): void => {
    const turn = waiting;
    waiting = [];
    for (let start = 0; start < turn.length; start += MAX_GROUP) void settle(turn.slice(start, start + MAX_GROUP));
  };
  return (item) =>
    new Promise<Result>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ item, resolve, reject });
    });
}
