// Where the dashboard keeps the bearer token it asked for, shared with the
// playground (same origin).
export const tokenKey = "chunklock.token";
