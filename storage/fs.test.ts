import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyFs, nodeFs, readWholeFile, writeFileAtomic, writeFully } from './fs.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'gregor-fs-'));
  dirs.push(d);
  return d;
}

describe('FaultyFs', () => {
  it('fails the next matching write with EIO and writes nothing', () => {
    const fs = new FaultyFs();
    const path = join(tempDir(), 'a.log');
    const fd = fs.open(path, 'create');
    fs.failNextWrite();
    expect(() => writeFully(fs, fd, Buffer.from('hello'), 0)).toThrow(expect.objectContaining({ code: 'EIO' }));
    writeFully(fs, fd, Buffer.from('ok'), 0);
    fs.close(fd);
    expect(readFileSync(path, 'utf8')).toBe('ok');
  });

  it('fails the next matching unlink or rename and leaves the file where it was', () => {
    const fs = new FaultyFs();
    const dir = tempDir();
    const a = join(dir, 'a');
    writeFileSync(a, 'x');
    fs.failNextUnlink('EIO', (p) => p === a);
    expect(() => fs.unlink(a)).toThrow(expect.objectContaining({ code: 'EIO' }));
    expect(fs.exists(a)).toBe(true);
    fs.failNextRename('EIO', (from) => from === a);
    expect(() => fs.rename(a, join(dir, 'b'))).toThrow(/EIO/);
    expect(fs.readdir(dir)).toEqual(['a']);
    fs.rename(a, join(dir, 'b'));
    fs.unlink(join(dir, 'b'));
    expect(fs.readdir(dir)).toEqual([]);
  });

  it('failAfterMutations lets n mutations through, then fails every one until lifted', () => {
    const fs = new FaultyFs();
    const dir = tempDir();
    const fd = fs.open(join(dir, 'a'), 'create');
    fs.failAfterMutations(2);
    writeFully(fs, fd, Buffer.from('one'), 0);
    fs.fsync(fd);
    expect(() => writeFully(fs, fd, Buffer.from('two'), 3)).toThrow(/EIO/);
    expect(() => fs.rename(join(dir, 'a'), join(dir, 'b'))).toThrow(/EIO/);
    expect(() => fs.ftruncate(fd, 0)).toThrow(/EIO/);
    fs.failAfterMutations(null);
    writeFully(fs, fd, Buffer.from('two'), 3);
    fs.close(fd);
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('onetwo');
  });

  it('tears a write after k bytes', () => {
    const fs = new FaultyFs();
    const path = join(tempDir(), 'a.log');
    const fd = fs.open(path, 'create');
    fs.tearNextWrite(3);
    expect(() => writeFully(fs, fd, Buffer.from('hello'), 0)).toThrow(/EIO/);
    fs.close(fd);
    expect(readFileSync(path, 'utf8')).toBe('hel');
  });

  it('fills the disk: what fits is written, then ENOSPC until space returns', () => {
    const fs = new FaultyFs();
    const path = join(tempDir(), 'a.log');
    const fd = fs.open(path, 'create');
    fs.setFreeBytes(4);
    expect(() => writeFully(fs, fd, Buffer.from('abcdef'), 0)).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(() => writeFully(fs, fd, Buffer.from('x'), 4)).toThrow(/ENOSPC/);
    fs.setFreeBytes(Infinity);
    writeFully(fs, fd, Buffer.from('ef'), 4);
    fs.close(fd);
    expect(readFileSync(path, 'utf8')).toBe('abcdef');
  });

  it('fails the next matching fsync only', () => {
    const fs = new FaultyFs();
    const dir = tempDir();
    const a = fs.open(join(dir, 'a.index'), 'create');
    const b = fs.open(join(dir, 'b.log'), 'create');
    fs.failNextFsync('EIO', (p) => p.endsWith('.log'));
    fs.fsync(a);
    expect(() => fs.fsync(b)).toThrow(/EIO/);
    fs.fsync(b);
    expect(fs.openCount()).toBe(2);
    fs.crash();
    expect(fs.openCount()).toBe(0);
  });
});

describe('writeFileAtomic', () => {
  it('replaces the file whole and leaves no temp file', () => {
    const dir = tempDir();
    const path = join(dir, 'x.checkpoint');
    writeFileSync(path, 'old');
    writeFileAtomic(nodeFs, path, Buffer.from('new'));
    expect(readWholeFile(nodeFs, path)?.toString()).toBe('new');
    expect(nodeFs.readdir(dir)).toEqual(['x.checkpoint']);
    expect(readWholeFile(nodeFs, join(dir, 'missing'))).toBeNull();
  });

  it('keeps the old file when the write fails', () => {
    const dir = tempDir();
    const path = join(dir, 'x.checkpoint');
    writeFileSync(path, 'old');
    const fs = new FaultyFs();
    fs.failNextFsync();
    expect(() => writeFileAtomic(fs, path, Buffer.from('new'))).toThrow(/EIO/);
    expect(readFileSync(path, 'utf8')).toBe('old');
  });
});
