/**
 * A sentence embedder. Implementations: USE-lite (the offline default), the static word-vector
 * model distilled from it (models/static-use-256), ONNX models under `models/` through
 * transformers.js, and any OpenAI-compatible `/v1/embeddings` URL.
 * Vectors are L2-normalised, so a dot product is the cosine similarity.
 */
export interface Embedder {
  /** Identifies the model and its settings; an index built with another id must be rebuilt. */
  readonly id: string;
  readonly dimensions: number;
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  close(): Promise<void>;
}
