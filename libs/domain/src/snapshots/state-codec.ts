/**
 * How a folded state becomes a snapshot and back: a plain JSON value, versioned. Pure, so a
 * unit test proves that a state read back from its snapshot and folded on gives what folding
 * the whole log gives. Each state writes its own (accounts/codec.ts): the states
 * hold Maps, Sets and Buffers, which JSON does not keep.
 */
export type StateCodec<S> = {
  /** Which state this is ('accounts'): a snapshot of another kind is refused. */
  readonly kind: string;
  /**
   * Raised whenever the JSON form or the fold's rules change (a snapshot holds the old rules'
   * result); a snapshot of any other version is skipped, and the log rebuilds the state.
   */
  readonly version: number;
  toJSON(state: S): unknown;
  /** Reads what toJSON wrote; throws on anything else. */
  fromJSON(json: unknown): S;
};
