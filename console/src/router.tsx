import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react';

/**
 * A few lines of history routing under /console (the server answers every /console path with the
 * app, src/common/console-assets.ts). Paths inside the app are written without the prefix.
 */
export const BASE = '/console';

const listeners = new Set<() => void>();

function notify(): void {
  for (const listener of listeners) listener();
}

window.addEventListener('popstate', notify);

export function currentPath(): string {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '/';
  return path === '' ? '/' : path;
}

/** The query string of the page's address (`?action=…`), '' without one: pages keep their filters there. */
export function currentSearch(): string {
  return window.location.search;
}

/** `path` may carry a query string (`/audit?action=api_key.created`): back and forward return to it. */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (options.replace) window.history.replaceState(null, '', BASE + path);
  else window.history.pushState(null, '', BASE + path);
  notify();
}

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function usePath(): string {
  return useSyncExternalStore(subscribe, currentPath);
}

/** The page address's query string, re-read on every navigation (links, back and forward). */
export function useSearch(): string {
  return useSyncExternalStore(subscribe, currentSearch);
}

export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    ) {
      return;
    }
    event.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} onClick={follow} {...rest} />;
}
