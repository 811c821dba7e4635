import { groupCommitted, MAX_GROUP } from './group-commit';

/** A commit over numbers whose every group is recorded; a group holding `failing` fails whole. */
function committer(failing?: number) {
  const groups: number[][] = [];
  const commit = groupCommitted<number, string>((items) => {
    groups.push([...items]);
    if (failing !== undefined && items.includes(failing)) return Promise.reject(new Error(`cannot write ${failing}`));
    return Promise.resolve(items.map((item) => `done ${item}`));
  });
  return { commit, groups };
}

describe('groupCommitted', () => {
  it("commits one event-loop turn's items together, in order, and answers each", async () => {
    const { commit, groups } = committer();
    expect(await Promise.all([commit(1), commit(2), commit(3)])).toEqual(['done 1', 'done 2', 'done 3']);
    expect(groups).toEqual([[1, 2, 3]]);
    await commit(4);
    expect(groups).toEqual([[1, 2, 3], [4]]);
  });

  it('a failing group is tried again item by item: only the failing item fails', async () => {
    const { commit, groups } = committer(2);
    const settled = await Promise.allSettled([commit(1), commit(2), commit(3)]);
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'done 1' },
      { status: 'rejected', reason: new Error('cannot write 2') },
      { status: 'fulfilled', value: 'done 3' },
    ]);
    expect(groups).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it(`splits a turn of more than ${MAX_GROUP} items into groups of at most ${MAX_GROUP}`, async () => {
    const { commit, groups } = committer();
    const items = Array.from({ length: MAX_GROUP + 1 }, (_, i) => i);
    expect(await Promise.all(items.map(commit))).toEqual(items.map((item) => `done ${item}`));
    expect(groups.map((group) => group.length)).toEqual([MAX_GROUP, 1]);
  });
});
