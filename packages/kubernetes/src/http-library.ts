import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type PromiseHttpLibrary, type RequestContext, ResponseContext } from '@kubernetes/client-node';

/**
 * client-node's HTTP transport over node:http(s) instead of node-fetch 2. node-fetch's check for
 * truncated chunked responses misfires on reused keep-alive sockets (node-fetch#1767): a write the
 * apiserver applied is reported as "Premature close". node:http itself handles keep-alive correctly.
 */
export const nodeHttpLibrary: PromiseHttpLibrary = {
  send(context: RequestContext): Promise<ResponseContext> {
    return new Promise((resolve, reject) => {
      const url = new URL(context.getUrl());
      const body = context.getBody();
      if (body !== undefined && typeof body !== 'string') {
        reject(new Error(`request body of ${context.getHttpMethod()} ${url.pathname} must be text; form data is not supported`));
        return;
      }
      const headers: Record<string, string | number> = { ...context.getHeaders() };
      if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
      const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
      const req = send(url, { method: context.getHttpMethod(), headers, agent: context.getAgent(), signal: context.getSignal() }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('close', () => {
          if (!res.complete) {
            reject(new Error(`connection closed before the whole response to ${context.getHttpMethod()} ${url.pathname} arrived`));
            return;
          }
          const data = Buffer.concat(chunks);
          const responseHeaders: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve(new ResponseContext(res.statusCode ?? 0, responseHeaders, { text: async () => data.toString('utf8'), binary: async () => data }));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  },
};
