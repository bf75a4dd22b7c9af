// The JavaScript peer (bench/peer/worker.js, unchanged) with its object's units counted.
import peer, { PeerClaims as Frozen } from '../peer/worker.js';
import { counted } from './count.js';

export const PeerClaims = counted('peer', Frozen);
export default peer;
