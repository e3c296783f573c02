/**
 * A Map that keeps at most `max` entries: setting a key makes it the newest, and past `max` the
 * oldest goes. For the small per-process memories (keys on a signing thread, refused rate-limit
 * keys, credentials seen to work) that must not grow with what strangers send.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly max: number;

  constructor(max: number) {
    super();
    this.max = max;
  }

  override set(key: K, value: V): this {
    super.delete(key);
    super.set(key, value);
    if (this.size > this.max) super.delete(this.keys().next().value!);
    return this;
  }
}
