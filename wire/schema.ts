/**
 * The shape of a message declaration. The files under wire/messages are produced
 * from Kafka's JSON definitions by wire/gen/generate.ts; this module only types them.
 */

/** Inclusive version range; `max` is 0x7fff when the range is open-ended. */
export type VersionRange = readonly [min: number, max: number];

export const OPEN_MAX = 0x7fff;

export type PrimitiveType =
  | 'bool'
  | 'int8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'float64'
  | 'string'
  | 'bytes'
  | 'records'
  | 'uuid';

export type DefaultValue = number | bigint | boolean | string | null;

export interface FieldDecl {
  /** lowerCamel form of Kafka's field name. */
  readonly name: string;
  /** A primitive, or 'struct' when `fields` describes the element. */
  readonly type: PrimitiveType | 'struct';
  /** True for `[]T` fields. */
  readonly array?: boolean;
  readonly versions: VersionRange;
  readonly nullable?: VersionRange;
  readonly tag?: number;
  readonly tagged?: VersionRange;
  /** Set when the field's own flexible range differs from the message's (e.g. `none`). */
  readonly flexible?: VersionRange | null;
  readonly default?: DefaultValue;
  /** Name of the struct type, for arrays of structs and struct fields. */
  readonly structName?: string;
  readonly fields?: readonly FieldDecl[];
}

export interface MessageDecl {
  readonly name: string;
  readonly apiKey?: number;
  readonly kind: 'request' | 'response' | 'header' | 'data';
  readonly versions: VersionRange;
  /** null when no version is flexible. */
  readonly flexible: VersionRange | null;
  /** True when Kafka marks the highest version as still unstable. */
  readonly latestUnstable?: boolean;
  readonly fields: readonly FieldDecl[];
}

export function inRange(range: VersionRange | null | undefined, version: number): boolean {
  return range != null && version >= range[0] && version <= range[1];
}
