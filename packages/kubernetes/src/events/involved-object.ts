/**
 * The object an Event is about (its `involvedObject`): a labelled Service, the CA Secret in ESO's
 * namespace (for the CA's failures, which concern no Service), or a pod whose certificate request
 * was decided.
 */
export interface InvolvedObject {
  /** Default `Service`. */
  readonly kind?: 'Service' | 'Secret' | 'Pod';
  /** The object's namespace. */
  readonly namespace: string;
  /** The object's name. */
  readonly name: string;
  /** The object's uid, which ties the Event to this incarnation of it. */
  readonly uid?: string;
}

/** The object's kind: a Service when the caller named none. */
export const kindOf = (o: InvolvedObject): NonNullable<InvolvedObject['kind']> => o.kind ?? 'Service';

/** `Kind/namespace/name`: the object as a key of the Events kept per object. */
export const objectKey = (o: InvolvedObject): string => `${kindOf(o)}/${o.namespace}/${o.name}`;
