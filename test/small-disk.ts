/**
 * A small file system of a test's own (tmpfs), to fill to the last byte and free again: how a
 * database behaves on a full disk. Mounting needs root (CI runs as root); where this process may
 * not mount, `smallDisk` answers undefined and the test skips, saying why.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CANNOT_MOUNT = 'cannot mount a tmpfs here (needs root)';

/** A tmpfs of `sizeMb` MiB mounted on a fresh folder, or undefined where this process may not mount one. */
export function smallDisk(sizeMb: number): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'disk-test-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

/**
 * The folder seen again, read-only, through a bind mount on a fresh folder: everything opened
 * through it is read-only for real, root or not. Undefined where this process may not mount.
 */
export function readOnlyView(dir: string): string | undefined {
  const view = mkdtempSync(join(tmpdir(), 'ro-view-'));
  try {
    execFileSync('mount', ['--bind', dir, view], { stdio: 'ignore' });
  } catch {
    rmSync(view, { recursive: true, force: true });
    return undefined;
  }
  try {
    execFileSync('mount', ['-o', 'remount,ro,bind', view], { stdio: 'ignore' });
    return view;
  } catch {
    unmount(view);
    return undefined;
  }
}

/** Unmounts the file system (or view) and removes its folder; whatever still runs on it should be stopped first. */
export function unmount(dir: string): void {
  execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Fills the file system until not even 1 KiB more fits; returns the filler, to remove when space
 * should come back.
 */
export function fill(dir: string): string {
  const filler = join(dir, 'filler');
  const fd = openSync(filler, 'w');
  try {
    for (const size of [1024 * 1024, 64 * 1024, 1024]) {
      const chunk = Buffer.alloc(size, 1);
      for (;;) {
        try {
          // A short write means the disk ran out partway: the next write fails and ends the size.
          writeSync(fd, chunk);
        } catch {
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return filler;
}
