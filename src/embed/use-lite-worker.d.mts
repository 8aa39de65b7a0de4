/** Types for use-lite-worker.mjs (plain JavaScript so that it runs as a worker from src/ and dist/ alike). */
export declare const WORKER_ROLE: 'kiwi-use-lite';

export interface UseLiteModel {
  readonly dimensions: number;
  /** Unit vectors, one per text, in order. */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Frees the weights (in-process mode; a worker is simply terminated). */
  dispose(): void;
}

export declare function loadUseLite(): Promise<UseLiteModel>;
