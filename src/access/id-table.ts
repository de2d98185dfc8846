// Entries by row id, for the venue index's big tables (credentials and attendees by id). Row ids
// come dense and mostly in order (the index loads in id order), so they go in an array from the
// first id seen: a million inserts cost about a quarter of a Map's, and the array's slots take
// less memory than a Map's entries. An id the array would leave a wide gap for (or one below its
// first) goes in a Map instead, so a sparse id never turns the array into a slow dictionary.

/** The widest gap of empty slots the array takes before an id goes to the Map instead (V8 makes an
 * array a dictionary when a write lands 1,024 or more past its capacity). */
const MAX_GAP = 512;

export class IdTable<T> {
  #base = -1;
  readonly #slots: (T | undefined)[] = [];
  #filled = 0;
  readonly #others = new Map<number, T>();

  get size(): number {
    return this.#filled + this.#others.size;
  }

  get(id: number): T | undefined {
    const slot = id - this.#base;
    if (slot >= 0 && slot < this.#slots.length) {
      const entry = this.#slots[slot];
      if (entry !== undefined) return entry;
    }
    return this.#others.size === 0 ? undefined : this.#others.get(id);
  }

  has(id: number): boolean {
    return this.get(id) !== undefined;
  }

  set(id: number, entry: T): void {
    if (this.#base === -1 && Number.isSafeInteger(id) && id >= 0) this.#base = id;
    const slot = id - this.#base;
    if (slot >= 0 && slot <= this.#slots.length + MAX_GAP && Number.isSafeInteger(id)) {
      if (this.#others.size !== 0) this.#others.delete(id);
      if (this.#slots[slot] === undefined) this.#filled += 1;
      this.#slots[slot] = entry;
    } else {
      this.#others.set(id, entry);
    }
  }

  delete(id: number): boolean {
    const slot = id - this.#base;
    if (slot >= 0 && slot < this.#slots.length && this.#slots[slot] !== undefined) {
      this.#slots[slot] = undefined;
      this.#filled -= 1;
      return true;
    }
    return this.#others.delete(id);
  }

  *entries(): IterableIterator<[number, T]> {
    for (let slot = 0; slot < this.#slots.length; slot++) {
      const entry = this.#slots[slot];
      if (entry !== undefined) yield [this.#base + slot, entry];
    }
    yield* this.#others.entries();
  }

  *values(): IterableIterator<T> {
    for (const [, entry] of this.entries()) yield entry;
  }
}
