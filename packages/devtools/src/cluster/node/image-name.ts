/** `repository` and `tag` of an image name such as localhost/eso-mtls/controller:0123abcd (the last colon after the last slash). */
export function splitImageName(name: string): { readonly repository: string; readonly tag: string } {
  const colon = name.lastIndexOf(':');
  if (colon <= name.lastIndexOf('/')) throw new Error(`image ${JSON.stringify(name)} has no tag: scripts/ensure-images.sh names every image with one`);
  return { repository: name.slice(0, colon), tag: name.slice(colon + 1) };
}
