import { useCallback, useEffect, useEffectEvent, useRef, useState } from 'react';

export interface Loaded<T> {
  /** The last data loaded (kept while a newer request is under way). */
  data: T | undefined;
  /** The failure of the current request, if it failed. */
  error: unknown;
  loading: boolean;
  reload: () => void;
  /** Loads again, as reload(); settles once that load's answer (or failure) is what the page shows. */
  reloaded: () => Promise<void>;
}

/**
 * Runs `load` when `key` changes (and on reload()). An answer that arrives after a newer request
 * started is dropped, so a slow page never overwrites a later one.
 */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [generation, setGeneration] = useState(0);
  const request = `${generation}:${key}`;
  const [result, setResult] = useState<{ request: string; data?: T; error?: unknown }>();
  const run = useEffectEvent(load);
  // reload()'s callers, each waiting for the answer of its generation (or a later one) to be shown.
  const latest = useRef(0);
  const waiting = useRef<Array<{ generation: number; settle: () => void }>>([]);

  useEffect(() => {
    let current = true;
    void run().then(
      (data) => current && setResult({ request, data }),
      (error: unknown) => current && setResult((previous) => ({ request, data: previous?.data, error })),
    );
    return () => {
      current = false;
    };
  }, [request]);

  useEffect(() => {
    if (result?.request !== request) return;
    const settled = waiting.current.filter((waiter) => waiter.generation <= generation);
    waiting.current = waiting.current.filter((waiter) => waiter.generation > generation);
    for (const waiter of settled) waiter.settle();
  }, [result, request, generation]);

  const reloaded = useCallback(() => {
    latest.current += 1;
    const next = latest.current;
    setGeneration(next);
    return new Promise<void>((settle) => waiting.current.push({ generation: next, settle }));
  }, []);
  const reload = useCallback(() => void reloaded(), [reloaded]);
  return {
    data: result?.data,
    error: result?.request === request ? result.error : undefined,
    loading: result?.request !== request,
    reload,
    reloaded,
  };
}

/** Sets the tab's title for the page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Gatehouse console`;
  }, [title]);
}
