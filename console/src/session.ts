import { useSyncExternalStore } from 'react';
import type { Permission } from './api/contract';

/**
 * The signed-in member: the session token and what the sign-in answered about the member. Kept in
 * memory and in this tab's sessionStorage (gone when the tab closes; no cookie, so no CSRF surface).
 * A new key's secret is never put here, nor anywhere but the page's memory (docs/console.md).
 */
export interface Session {
  token: string;
  /** Epoch milliseconds. */
  expiresAt: number;
  userId: string;
  /** Who is signed in, shown in the header. */
  email: string;
  organization: { id: string; name: string };
  role: string;
  permissions: Permission[];
}

const STORAGE_KEY = 'gatehouse.console.session';

let current: Session | undefined = read();
/** Why the member was signed out, shown on the sign-in page. */
let notice: string | undefined;
const listeners = new Set<() => void>();

function read(): Session | undefined {
  try {
    const raw = window.sessionStorage.getItem(STORAGE_KEY);
    if (raw === null) return undefined;
    const session = JSON.parse(raw) as Session;
    return typeof session.token === 'string' && session.expiresAt > Date.now() ? session : undefined;
  } catch {
    return undefined;
  }
}

function changed(): void {
  for (const listener of listeners) listener();
}

export function getSession(): Session | undefined {
  if (current !== undefined && current.expiresAt <= Date.now()) {
    endSession('Your session has ended. Sign in again with a new link.');
  }
  return current;
}

export function startSession(session: Session): void {
  current = session;
  notice = undefined;
  window.sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  changed();
}

export function endSession(reason?: string): void {
  current = undefined;
  notice = reason;
  window.sessionStorage.removeItem(STORAGE_KEY);
  changed();
}

export function takeNotice(): string | undefined {
  return notice;
}

export function can(session: Session | undefined, permission: Permission): boolean {
  return session?.permissions.includes(permission) ?? false;
}

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

export function useSession(): Session | undefined {
  return useSyncExternalStore(subscribe, () => current);
}
