/** A UUID in its canonical text: lower case, dashed (what Gatehouse writes in ids, tokens and events). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
