// The /v1 API as the pages call it: same origin, the browser's own
// credentials (HTTP basic), JSON in and out, ETags for If-Match.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
    // The API's 400s start with the field's dotted path: "weights[1].factor: ...",
    // "request_spec.flavor.extra_specs.resources:cpu.percent: ...".
    const match = /^([A-Za-z_][\w.:[\]]*): /.exec(message);
    this.field = status === 400 && match ? match[1] : null;
  }
}

export async function call(method, path, body = undefined, headers = {}) {
  const init = {method, headers: {...headers}, credentials: "same-origin"};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) {
    throw new ApiError(response.status, data?.error?.message ?? response.statusText);
  }
  return {data, etag: response.headers.get("ETag")};
}

export const get = (path) => call("GET", path);
