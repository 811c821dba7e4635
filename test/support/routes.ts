import { METHODS } from 'node:http';
import { INestApplication, RequestMethod, Type } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer, Reflector } from '@nestjs/core';
import { ANY_MEMBER, IS_PUBLIC, REQUIRED_PERMISSIONS, SESSION_ONLY } from '../../src/identity/access.decorators';
import { TestApp } from './test-app';

/** `METHOD /path` -> how the route is protected, as declared on the controller. */
export type RouteDeclarations = Record<string, string>;

/** Path parameters are written as OpenAPI writes them: `/v1/user-api-keys/{id}`. */
function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function joinPath(...parts: Array<string | undefined>): string {
  const path = parts
    .filter((part): part is string => part !== undefined && part !== '')
    .join('/')
    .replace(/\/+/g, '/')
    .replace(/\/$/, '');
  return openApiPath(path.startsWith('/') ? path : `/${path}`);
}

function firstPath(value: unknown): string | undefined {
  return Array.isArray(value) ? String(value[0]) : (value as string | undefined);
}

/** How a controller method is protected, as its decorators (and its controller's) declare it. */
export function describeAccess(reflector: Reflector, handler: object, controller: Type): string {
  const targets = [handler as () => void, controller];
  const guards = (
    Reflect.getMetadata(GUARDS_METADATA, handler) ??
    Reflect.getMetadata(GUARDS_METADATA, controller) ??
    []
  )
    .map((guard: { name?: string }) => guard.name ?? 'anonymous guard')
    .join(', ');
  const parts: string[] = [];
  if (reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) parts.push('public');
  else {
    const permissions = reflector.getAllAndOverride<string[] | undefined>(REQUIRED_PERMISSIONS, targets) ?? [];
    const anyMember = reflector.getAllAndOverride<boolean>(ANY_MEMBER, targets) === true;
    const sessionOnly = reflector.getAllAndOverride<boolean>(SESSION_ONLY, targets) === true;
    if (sessionOnly) parts.push('bearer, any member, session token only');
    else if (anyMember) parts.push('bearer, any member');
    // Neither a permission nor @AnyMember(): the guard lets every member through, but nobody said so.
    else if (permissions.length === 0) parts.push('bearer, undeclared');
    if (permissions.length > 0) parts.push(`bearer + ${permissions.join(' + ')}`);
  }
  if (guards !== '') parts.push(`guarded by ${guards}`);
  return parts.join(', ');
}

export interface DeclaredRoute {
  /** `METHOD /path`, e.g. `GET /v1/user-api-keys/:id`. */
  route: string;
  handler: (...args: never[]) => unknown;
  controller: Type;
}

/** Every controller route Nest knows of, with the handler and controller that declare it. */
export function declaredRoutes(t: TestApp | INestApplication): DeclaredRoute[] {
  const app = t instanceof TestApp ? t.app : t;
  const scanner = new MetadataScanner();
  const routes = new Map<string, DeclaredRoute>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type | null;
      if (controller === null || typeof controller !== 'function') continue;
      const base = firstPath(Reflect.getMetadata(PATH_METADATA, controller));
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, DeclaredRoute['handler']>)[name];
        const path = Reflect.getMetadata(PATH_METADATA, handler) as unknown;
        if (path === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
        const route = `${method} ${joinPath(base, firstPath(path))}`;
        routes.set(route, { route, handler, controller });
      }
    }
  }
  return [...routes.values()];
}

/** Every controller route with its @Public / @RequirePermissions / @UseGuards declaration. */
export function nestRouteDeclarations(app: INestApplication): RouteDeclarations {
  const reflector = new Reflector();
  return Object.fromEntries(
    declaredRoutes(app).map(({ route, handler, controller }) => [
      route,
      describeAccess(reflector, handler, controller),
    ]),
  );
}

interface ExpressLayer {
  route?: { path: unknown; methods: Record<string, boolean> };
}

/**
 * Every route the HTTP server answers, as `METHOD /path`, read from Express's router: it also sees
 * routes mounted outside Nest's controllers (and so outside its guards). A middleware mounted for
 * every method (a request logger) is not a route and is left out.
 */
export function expressRoutes(app: INestApplication): string[] {
  const express = app.getHttpAdapter().getInstance() as { router: { stack: ExpressLayer[] } };
  const routes = new Set<string>();
  for (const layer of express.router.stack) {
    if (layer.route === undefined) continue;
    const methods = Object.keys(layer.route.methods).filter((m) => m !== '_all');
    if (layer.route.methods._all || methods.length >= METHODS.length) continue;
    const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
    for (const path of paths)
      for (const method of methods) routes.add(`${method.toUpperCase()} ${openApiPath(String(path))}`);
  }
  return [...routes].sort();
}
