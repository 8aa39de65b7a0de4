/**
 * Calls `done` once the response body has been sent or abandoned (SSE streams stay open while a
 * tool runs); a body that ends waits for `done` before its end goes out.
 */
export function trackBody(response: Response, done: () => void | Promise<void>): Response {
  if (response.body === null) {
    void done();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: finished, value } = await reader.read();
        if (finished) {
          await done();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        void done();
      }
    },
    async cancel(reason) {
      void done();
      await reader.cancel(reason).catch(() => undefined);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

