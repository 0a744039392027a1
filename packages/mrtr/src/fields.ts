/**
 * Field descriptors: `ask.string(desc)`, `ask.number(desc)`, `ask.integer(desc)`, `ask.boolean(desc)`,
 * `ask.enum(values)`. Each one is an immutable builder that knows its piece of the elicitation
 * `requestedSchema` (MCP 2025-11-25 / 2026-07-28 `PrimitiveSchemaDefinition`, spec
 * `client/elicitation#requested-schema`) and, through TypeScript, the type of its answer.
 */
import type { JsonObject } from '@mcp-tether/core';

/** `format` values the spec allows on string fields. */
export type StringFormat = 'email' | 'uri' | 'date' | 'date-time';

/** @internal What a descriptor holds. */
interface FieldSpec {
  /** The wire schema, without `default`. */
  readonly schema: JsonObject;
  /** Marked `.optional()`. */
  readonly optional: boolean;
  readonly hasDefault: boolean;
  readonly default?: unknown;
}

const SPEC = Symbol('mcp-tether.mrtr.field-spec');

/**
 * Base of every field descriptor. `T` is the type of the answer; `O` is true when the answer may
 * be missing (`.optional()` without a default).
 */
export abstract class Field<T, O extends boolean = false> {
  /** @internal phantom: the answer type */
  declare readonly __answer: T;
  /** @internal phantom: whether the answer may be absent */
  declare readonly __optional: O;
  /** @internal */
  readonly [SPEC]: FieldSpec;

  protected constructor(spec: FieldSpec) {
    this[SPEC] = spec;
  }

  /** @internal a copy of this descriptor with `patch` applied to its spec */
  protected with(patch: Partial<FieldSpec>): any {
    const copy = Object.assign(Object.create(Object.getPrototypeOf(this)), this) as { [SPEC]: FieldSpec };
    copy[SPEC] = { ...this[SPEC], ...patch, schema: { ...this[SPEC].schema, ...patch.schema } };
    return Object.freeze(copy);
  }

  /** True when the field is left out of `required` (marked optional, or has a default). */
  get isOptional(): boolean {
    const s = this[SPEC];
    return s.optional || s.hasDefault;
  }

  /** The field's `PrimitiveSchemaDefinition` as it goes on the wire (a fresh object). */
  toSchema(): JsonObject {
    const s = this[SPEC];
    const out: JsonObject = structuredClone(s.schema);
    if (s.hasDefault) out.default = structuredClone(s.default);
    return out;
  }
}

/** A text field: `{ type: "string", minLength?, maxLength?, format? }`. */
export class StringField<O extends boolean = false> extends Field<string, O> {
  /** @internal */
  constructor(spec: FieldSpec) {
    super(spec);
  }
  /** Display label (`title`). */
  title(title: string): StringField<O> {
    return this.with({ schema: { title } });
  }
  /** Help text (`description`). */
  describe(description: string): StringField<O> {
    return this.with({ schema: { description } });
  }
  /** Minimum length in characters (`minLength`). */
  minLength(n: number): StringField<O> {
    return this.with({ schema: { minLength: nonNegativeInt(n, 'minLength') } });
  }
  /** Maximum length in characters (`maxLength`). */
  maxLength(n: number): StringField<O> {
    return this.with({ schema: { maxLength: nonNegativeInt(n, 'maxLength') } });
  }
  /** One of the formats the spec allows: `email`, `uri`, `date`, `date-time`. */
  format(format: StringFormat): StringField<O> {
    if (!['email', 'uri', 'date', 'date-time'].includes(format))
      throw new TypeError(`mrtr: unknown string format ${JSON.stringify(format)}`);
    return this.with({ schema: { format } });
  }
  /** The answer may be missing (not in `required`); `readInput` then gives `undefined` for it. */
  optional(): StringField<true> {
    return this.with({ optional: true });
  }
  /** Pre-filled value (`default`, SEP-1034). The field leaves `required`; a missing answer takes this value. */
  default(value: string): StringField<false> {
    if (typeof value !== 'string') throw new TypeError('mrtr: a string field default must be a string');
    return this.with({ hasDefault: true, default: value, optional: false });
  }
}

/** A number field: `{ type: "number" | "integer", minimum?, maximum? }`. */
export class NumberField<O extends boolean = false> extends Field<number, O> {
  /** @internal */
  constructor(spec: FieldSpec) {
    super(spec);
  }
  /** Display label (`title`). */
  title(title: string): NumberField<O> {
    return this.with({ schema: { title } });
  }
  /** Help text (`description`). */
  describe(description: string): NumberField<O> {
    return this.with({ schema: { description } });
  }
  /** Smallest allowed value, inclusive (`minimum`). */
  min(n: number): NumberField<O> {
    return this.with({ schema: { minimum: finite(n, 'min') } });
  }
  /** Largest allowed value, inclusive (`maximum`). */
  max(n: number): NumberField<O> {
    return this.with({ schema: { maximum: finite(n, 'max') } });
  }
  /** The answer may be missing (not in `required`). */
  optional(): NumberField<true> {
    return this.with({ optional: true });
  }
  /** Pre-filled value (`default`). The field leaves `required`; a missing answer takes this value. */
  default(value: number): NumberField<false> {
    return this.with({ hasDefault: true, default: finite(value, 'default'), optional: false });
  }
}

/** A yes/no field: `{ type: "boolean" }`. */
export class BooleanField<O extends boolean = false> extends Field<boolean, O> {
  /** @internal */
  constructor(spec: FieldSpec) {
    super(spec);
  }
  /** Display label (`title`). */
  title(title: string): BooleanField<O> {
    return this.with({ schema: { title } });
  }
  /** Help text (`description`). */
  describe(description: string): BooleanField<O> {
    return this.with({ schema: { description } });
  }
  /** The answer may be missing (not in `required`). */
  optional(): BooleanField<true> {
    return this.with({ optional: true });
  }
  /** Pre-filled value (`default`). The field leaves `required`; a missing answer takes this value. */
  default(value: boolean): BooleanField<false> {
    if (typeof value !== 'boolean') throw new TypeError('mrtr: a boolean field default must be a boolean');
    return this.with({ hasDefault: true, default: value, optional: false });
  }
}

/** One choice of an enum: its value and the label shown to the user. */
export interface EnumOption<V extends string = string> {
  readonly value: V;
  readonly title: string;
}

/**
 * A single-select field. Untitled: `{ type: "string", enum: [...] }`; titled:
 * `{ type: "string", oneOf: [{ const, title }] }`; legacy titled (`.legacy()`):
 * `{ type: "string", enum, enumNames }`.
 */
export class EnumField<V extends string, O extends boolean = false> extends Field<V, O> {
  /** @internal */
  constructor(
    spec: FieldSpec,
    /** @internal */ readonly options: ReadonlyArray<EnumOption<V>>,
    /** @internal */ readonly titled: boolean,
  ) {
    super(spec);
  }
  /** Display label (`title`). */
  title(title: string): EnumField<V, O> {
    return this.with({ schema: { title } });
  }
  /** Help text (`description`). */
  describe(description: string): EnumField<V, O> {
    return this.with({ schema: { description } });
  }
  /**
   * Send titled choices in the deprecated 2025-06-18 form `{ enum, enumNames }` instead of
   * `oneOf` (MCP `LegacyTitledEnumSchema`; for old clients only).
   */
  legacy(): EnumField<V, O> {
    if (!this.titled) throw new TypeError('mrtr: .legacy() applies to titled choices only');
    const { oneOf: _titled, ...rest } = this[SPEC].schema;
    const schema: JsonObject = {
      ...rest,
      enum: this.options.map((o) => o.value),
      enumNames: this.options.map((o) => o.title),
    };
    const copy = Object.assign(Object.create(Object.getPrototypeOf(this)), this) as { [SPEC]: FieldSpec };
    copy[SPEC] = { ...this[SPEC], schema };
    return Object.freeze(copy) as never;
  }
  /**
   * Let the user pick several: `{ type: "array", items: { type: "string", enum } }` (untitled) or
   * `{ type: "array", items: { anyOf: [{ const, title }] } }` (titled). The answer is an array.
   * @param limits `min`/`max` number of picks (`minItems`/`maxItems`)
   */
  multiple(limits: { min?: number; max?: number } = {}): MultiEnumField<V, O> {
    const own = this[SPEC].schema;
    const schema: JsonObject = { type: 'array' };
    if (own.title !== undefined) schema.title = own.title;
    if (own.description !== undefined) schema.description = own.description;
    if (limits.min !== undefined) schema.minItems = nonNegativeInt(limits.min, 'min');
    if (limits.max !== undefined) schema.maxItems = nonNegativeInt(limits.max, 'max');
    schema.items = this.titled
      ? { anyOf: this.options.map((o) => ({ const: o.value, title: o.title })) }
      : { type: 'string', enum: this.options.map((o) => o.value) };
    return new MultiEnumField<V, O>({ schema, optional: this[SPEC].optional, hasDefault: false }, this.options);
  }
  /** The answer may be missing (not in `required`). */
  optional(): EnumField<V, true> {
    return this.with({ optional: true });
  }
  /** Pre-selected value (`default`); must be one of the choices. */
  default(value: V): EnumField<V, false> {
    if (!this.options.some((o) => o.value === value))
      throw new TypeError(`mrtr: enum default ${JSON.stringify(value)} is not one of the choices`);
    return this.with({ hasDefault: true, default: value, optional: false });
  }
}

/** A multi-select field (answer: an array of the chosen values). Made by `ask.enum(...).multiple()`. */
export class MultiEnumField<V extends string, O extends boolean = false> extends Field<V[], O> {
  /** @internal */
  constructor(
    spec: FieldSpec,
    /** @internal */ readonly options: ReadonlyArray<EnumOption<V>>,
  ) {
    super(spec);
  }
  /** Display label (`title`). */
  title(title: string): MultiEnumField<V, O> {
    return this.with({ schema: { title } });
  }
  /** Help text (`description`). */
  describe(description: string): MultiEnumField<V, O> {
    return this.with({ schema: { description } });
  }
  /** The answer may be missing (not in `required`). */
  optional(): MultiEnumField<V, true> {
    return this.with({ optional: true });
  }
  /** Pre-selected values (`default`); each must be one of the choices. */
  default(values: readonly V[]): MultiEnumField<V, false> {
    if (!Array.isArray(values) || values.some((v) => !this.options.some((o) => o.value === v))) {
      throw new TypeError('mrtr: multi-select default must be an array of the choices');
    }
    return this.with({ hasDefault: true, default: [...values], optional: false });
  }
}

/** Any field descriptor. */
export type AnyField = Field<any, boolean>;
/** A form: field name → descriptor. Field names are the keys of the answer object. */
export type Fields = { readonly [name: string]: AnyField };

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type RequiredKeys<F extends Fields> = { [K in keyof F]: F[K] extends Field<any, true> ? never : K }[keyof F];
type OptionalKeys<F extends Fields> = { [K in keyof F]: F[K] extends Field<any, true> ? K : never }[keyof F];
type AnswerOf<X> = X extends Field<infer T, any> ? T : never;

/**
 * The typed answer of a form: required fields and fields with a default are always present,
 * `.optional()` fields may be missing.
 */
export type Infer<F extends Fields> = Simplify<
  { [K in RequiredKeys<F>]: AnswerOf<F[K]> } & { [K in OptionalKeys<F>]?: AnswerOf<F[K]> }
>;

/**
 * A single choice (see `ask.enum`). A record orders its keys the JavaScript way (integer-like keys
 * first); use the list form when the order of numeric-looking values matters.
 * @throws TypeError for no choices, duplicates, or values that are not strings
 */
function enumField<const V extends string>(values: readonly V[], description?: string): EnumField<V>;
function enumField<const V extends string>(values: ReadonlyArray<EnumOption<V>>, description?: string): EnumField<V>;
function enumField<const V extends string>(values: Readonly<Record<V, string>>, description?: string): EnumField<V>;
function enumField<V extends string>(
  values: readonly V[] | ReadonlyArray<EnumOption<V>> | Readonly<Record<V, string>>,
  description?: string,
): EnumField<V> {
  let options: EnumOption<V>[];
  let titled: boolean;
  if (Array.isArray(values)) {
    if (values.every((v) => typeof v === 'string')) {
      options = (values as V[]).map((v) => ({ value: v, title: v }));
      titled = false;
    } else if (
      values.every(
        (v) => typeof v === 'object' && v !== null && typeof v.value === 'string' && typeof v.title === 'string',
      )
    ) {
      options = (values as EnumOption<V>[]).map((o) => ({ value: o.value, title: o.title }));
      titled = true;
    } else
      throw new TypeError('mrtr: ask.enum() takes strings, { value, title } objects, or a { value: title } record');
  } else if (typeof values === 'object' && values !== null) {
    options = Object.entries(values as Record<V, string>).map(([value, title]) => {
      if (typeof title !== 'string') throw new TypeError('mrtr: ask.enum() record titles must be strings');
      return { value: value as V, title };
    });
    titled = true;
  } else throw new TypeError('mrtr: ask.enum() takes a list or a record of choices');
  if (options.length === 0) throw new TypeError('mrtr: ask.enum() needs at least one choice');
  if (new Set(options.map((o) => o.value)).size !== options.length)
    throw new TypeError('mrtr: ask.enum() choices must be distinct');
  const schema: JsonObject = { type: 'string' };
  if (description !== undefined) schema.description = description;
  if (titled) schema.oneOf = options.map((o) => ({ const: o.value, title: o.title }));
  else schema.enum = options.map((o) => o.value);
  return new EnumField<V>({ schema, optional: false, hasDefault: false }, options, titled);
}

/** Field descriptors. */
export const ask = {
  /** A text field. @param description help text shown with the field */
  string(description?: string): StringField {
    return new StringField(base('string', description));
  },
  /** A number field (`type: "number"`). Chain `.min()` / `.max()` for bounds. */
  number(description?: string): NumberField {
    return new NumberField(base('number', description));
  },
  /** A whole-number field (`type: "integer"`). */
  integer(description?: string): NumberField {
    return new NumberField(base('integer', description));
  },
  /** A yes/no field. */
  boolean(description?: string): BooleanField {
    return new BooleanField(base('boolean', description));
  },
  /**
   * A single choice. `values` is either a list of plain values (untitled: `enum`), a list of
   * `{ value, title }` or a `{ value: title }` record (titled: `oneOf [{ const, title }]`).
   * Chain `.multiple()` for a multi-select, `.legacy()` for the deprecated `enumNames` form.
   */
  enum: enumField,
};

function base(type: string, description: string | undefined): FieldSpec {
  const schema: JsonObject = { type };
  if (description !== undefined) schema.description = description;
  return { schema, optional: false, hasDefault: false };
}

function finite(n: number, what: string): number {
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new TypeError(`mrtr: ${what} must be a finite number`);
  return n;
}

function nonNegativeInt(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 0) throw new TypeError(`mrtr: ${what} must be a non-negative integer`);
  return n;
}

/** True for a field descriptor made by {@link ask}. */
export function isField(value: unknown): value is AnyField {
  return value instanceof Field;
}

/**
 * The form's `requestedSchema`: `{ type: "object", properties, required }` with every field's
 * schema; `required` lists the fields that are neither `.optional()` nor have a default (it is
 * always present, possibly empty).
 * @throws TypeError when a value is not a field descriptor
 */
export function requestedSchema(fields: Fields): JsonObject {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
    throw new TypeError('mrtr: fields must be an object of ask.* descriptors');
  const properties: JsonObject = {};
  const required: string[] = [];
  for (const [name, field] of Object.entries(fields)) {
    if (!isField(field)) throw new TypeError(`mrtr: field ${JSON.stringify(name)} is not an ask.* descriptor`);
    if (name === '') throw new TypeError('mrtr: field names must not be empty');
    properties[name] = field.toSchema();
    if (!field.isOptional) required.push(name);
  }
  return { type: 'object', properties, required };
}
