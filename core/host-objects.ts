/**
 * What a plugin package gets through @community-platform/sdk: the host's own objects, registered
 * on a well-known symbol before any package is imported (core/discover.ts), so every plugin shares
 * one registry and one copy of each class however npm laid out its folder.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { rootDir } from './config.ts';
import * as core from './index.ts';

/** The SDK's version is the host's: packages/sdk is versioned with it. */
export const sdkVersion = (JSON.parse(readFileSync(join(rootDir, 'package.json'), 'utf8')) as { version: string }).version;
/** The range a plugin built with this SDK declares; the host takes any plugin whose declared range this version satisfies. */
export const sdkRange = `^${sdkVersion}`;

const objects = { ...core, Type, sdkVersion, sdkRange };
export type HostObjects = typeof objects;

(globalThis as Record<symbol, unknown>)[Symbol.for('community-platform.host')] ??= Object.freeze(objects);
