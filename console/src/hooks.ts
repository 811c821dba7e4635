import { useCallback, useEffect, useEffectEvent, useState } from 'react';

export interface Loaded<T> {
  /** The last data loaded (kept while a newer request is under way). */
  data: T | undefined;
  /** The failure of the current request, if it failed. */
  error: unknown;
  loading: boolean;
  reload: () => void;
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

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return {
    data: result?.data,
    error: result?.request === request ? result.error : undefined,
    loading: result?.request !== request,
    reload,
  };
}

/** Sets the tab's title for the page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Gatehouse console`;
  }, [title]);
}
