import { METHODS } from 'node:http';
import { INestApplication, RequestMethod, Type } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer, Reflector } from '@nestjs/core';
import { ROUTE_ACCESS, RouteAccess } from '../../src/identity/access.decorators';
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

/**
 * How a controller method is protected, as its decorators (and its controller's) declare it: "public"; "bearer + P"
 * (the permissions), "bearer, any member", "bearer, any member, session token only"; another scheme by its guard's
 * name; "undeclared"; and ", guarded by G" for a guard that is not the scheme's (a limit).
 */
export function describeAccess(reflector: Reflector, handler: object, controller: Type): string {
  const targets = [handler as () => void, controller];
  const access = reflector.getAllAndOverride<RouteAccess | undefined>(ROUTE_ACCESS, targets);
  const scheme = access?.kind === 'scheme' ? access.scheme : undefined;
  const guards = ((Reflect.getMetadata(GUARDS_METADATA, handler) ?? []) as Array<{ name?: string }>)
    .concat(Reflect.getMetadata(GUARDS_METADATA, controller) ?? [])
    .filter((guard) => guard !== scheme)
    .map((guard) => guard.name ?? 'anonymous guard');
  let described: string;
  if (access === undefined) described = 'undeclared';
  else if (access.kind === 'public') described = 'public';
  else if (access.kind === 'scheme') described = access.scheme.name;
  else if (access.sessionOnly) described = 'bearer, any member, session token only';
  else if (access.permissions.length === 0) described = 'bearer, any member';
  else described = `bearer + ${access.permissions.join(' + ')}`;
  return guards.length === 0 ? described : `${described}, guarded by ${guards.join(', ')}`;
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

/** Every controller route with its @Public / @Authenticated / @UseGuards declaration. */
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
