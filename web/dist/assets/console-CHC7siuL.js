import"./modulepreload-polyfill-P2Xu9kJm.js";import{n as e}from"./dist-B3T4JJAN.js";var t,n,r,i,a,o,s,c,l,u,d,f,p,m,h={},g=[],_=/acit|ex(?:s|g|n|p|$)|rph|grid|ows|mnc|ntw|ine[ch]|zoo|^ord|itera/i,v=Array.isArray;function y(e,t){for(var n in t)e[n]=t[n];return e}function b(e){e&&e.parentNode&&e.parentNode.removeChild(e)}function x(e,n,r){var i,a,o,s={};for(o in n)o==`key`?i=n[o]:o==`ref`?a=n[o]:s[o]=n[o];if(arguments.length>2&&(s.children=arguments.length>3?t.call(arguments,2):r),typeof e==`function`&&e.defaultProps!=null)for(o in e.defaultProps)s[o]===void 0&&(s[o]=e.defaultProps[o]);return S(e,s,i,a,null)}function S(e,t,i,a,o){var s={type:e,props:t,key:i,ref:a,__k:null,__:null,__b:0,__e:null,__c:null,constructor:void 0,__v:o??++r,__i:-1,__u:0};return o==null&&n.vnode!=null&&n.vnode(s),s}function C(e){return e.children}function w(e,t){this.props=e,this.context=t}function T(e,t){if(t==null)return e.__?T(e.__,e.__i+1):null;for(var n;t<e.__k.length;t++)if((n=e.__k[t])!=null&&n.__e!=null)return n.__e;return typeof e.type==`function`?T(e):null}function E(e){if(e.__P&&e.__d){var t=e.__v,r=t.__e,i=[],a=[],o=y({},t);o.__v=t.__v+1,n.vnode&&n.vnode(o),F(e.__P,o,t,e.__n,e.__P.namespaceURI,32&t.__u?[r]:null,i,r??T(t),!!(32&t.__u),a),o.__v=t.__v,o.__.__k[o.__i]=o,re(i,o,a),t.__e=t.__=null,o.__e!=r&&D(o)}}function D(e){if((e=e.__)!=null&&e.__c!=null)return e.__e=e.__c.base=null,e.__k.some(function(t){if(t!=null&&t.__e!=null)return e.__e=e.__c.base=t.__e}),D(e)}function O(e){(!e.__d&&(e.__d=!0)&&i.push(e)&&!k.__r++||a!=n.debounceRendering)&&((a=n.debounceRendering)||o)(k)}function k(){try{for(var e,t=1;i.length;)i.length>t&&i.sort(s),e=i.shift(),t=i.length,E(e)}finally{i.length=k.__r=0}}function ee(e,t,n,r,i,a,o,s,c,l,u){var d,f,p,m,_,v,y=r&&r.__k||g,b=t.length;for(c=A(n,t,y,c,b),d=0;d<b;d++)(p=n.__k[d])!=null&&(f=p.__i!=-1&&y[p.__i]||h,p.__i=d,v=F(e,p,f,i,a,o,s,c,l,u),m=p.__e,p.ref&&f.ref!=p.ref&&(f.ref&&I(f.ref,null,p),u.push(p.ref,p.__c||m,p)),_==null&&m!=null&&(_=m),4&p.__u?(c=j(p,c,e),f.__e&&(f.__e=null)):typeof p.type==`function`&&v!==void 0?c=v:m&&(c=m.nextSibling),p.__u&=-7);return n.__e=_,c}function A(e,t,n,r,i){var a,o,s,c,l,u=n.length,d=u,f=0;for(e.__k=Array(i),a=0;a<i;a++)(o=t[a])!=null&&typeof o!=`boolean`&&typeof o!=`function`?(typeof o==`string`||typeof o==`number`||typeof o==`bigint`||o.constructor==String?o=e.__k[a]=S(null,o,null,null,null):v(o)?o=e.__k[a]=S(C,{children:o},null,null,null):o.constructor===void 0&&o.__b>0?o=e.__k[a]=S(o.type,o.props,o.key,o.ref?o.ref:null,o.__v):e.__k[a]=o,c=a+f,o.__=e,o.__b=e.__b+1,s=null,(l=o.__i=M(o,n,c,d))!=-1&&(d--,(s=n[l])&&(s.__u|=2)),s==null||s.__v==null?(l==-1&&(i>u?f--:i<u&&f++),typeof o.type!=`function`&&(o.__u|=4)):l!=c&&(l==c-1?f--:l==c+1?f++:(l>c?f--:f++,o.__u|=4))):e.__k[a]=null;if(d)for(a=0;a<u;a++)(s=n[a])!=null&&!(2&s.__u)&&(s.__e==r&&(r=T(s)),oe(s,s));return r}function j(e,t,n){var r,i;if(typeof e.type==`function`){for(r=e.__k,i=0;r&&i<r.length;i++)r[i]&&(r[i].__=e,t=j(r[i],t,n));return t}e.__e!=t&&(t&&e.type&&!t.parentNode&&(t=T(e)),t=n.insertBefore(e.__e,t||null));do t&&=t.nextSibling;while(t!=null&&t.nodeType==8);return t}function M(e,t,n,r){var i,a,o,s=e.key,c=e.type,l=t[n],u=l!=null&&!(2&l.__u);if(l===null&&s==null||u&&s==l.key&&c==l.type)return n;if(r>+!!u){for(i=n-1,a=n+1;i>=0||a<t.length;)if((l=t[o=i>=0?i--:a++])!=null&&!(2&l.__u)&&s==l.key&&c==l.type)return o}return-1}function N(e,t,n){t[0]==`-`?e.setProperty(t,n??``):e[t]=n==null?``:typeof n!=`number`||_.test(t)?n:n+`px`}function P(e,t,n,r,i){var a,o;n:if(t==`style`){if(typeof n==`string`)e.style.cssText=n;else{if(typeof r==`string`&&(e.style.cssText=r=``),r)for(t in r)n&&t in n||N(e.style,t,``);if(n)for(t in n)r&&n[t]==r[t]||N(e.style,t,n[t])}}else if(t[0]==`o`&&t[1]==`n`)a=t!=(t=t.replace(d,`$1`)),o=t.toLowerCase(),t=o in e||t==`onFocusOut`||t==`onFocusIn`?o.slice(2):t.slice(2),e.l||={},e.l[t+a]=n,n?r?n[u]=r[u]:(n[u]=f,e.addEventListener(t,a?m:p,a)):e.removeEventListener(t,a?m:p,a);else{if(i==`http://www.w3.org/2000/svg`)t=t.replace(/xlink(H|:h)/,`h`).replace(/sName$/,`s`);else if(t!=`width`&&t!=`height`&&t!=`href`&&t!=`list`&&t!=`form`&&t!=`tabIndex`&&t!=`download`&&t!=`rowSpan`&&t!=`colSpan`&&t!=`role`&&t!=`popover`&&t in e)try{e[t]=n??``;break n}catch{}typeof n==`function`||(n==null||!1===n&&t[4]!=`-`?e.removeAttribute(t):e.setAttribute(t,t==`popover`&&n==1?``:n))}}function te(e){return function(t){if(this.l){var r=this.l[t.type+e];if(t[l]==null)t[l]=f++;else if(t[l]<r[u])return;return r(n.event?n.event(t):t)}}}function F(e,t,r,i,a,o,s,c,l,u){var d,f,p,m,h,_,x,S,E,D,O,k,A,j,M,N,P=t.type;if(t.constructor!==void 0)return null;128&r.__u&&(l=!!(32&r.__u),o=[c=t.__e=r.__e]),(d=n.__b)&&d(t);n:if(typeof P==`function`){f=s.length;try{if(E=t.props,D=P.prototype&&P.prototype.render,O=(d=P.contextType)&&i[d.__c],k=d?O?O.props.value:d.__:i,r.__c?S=(p=t.__c=r.__c).__=p.__E:(D?t.__c=p=new P(E,k):(t.__c=p=new w(E,k),p.constructor=P,p.render=se),O&&O.sub(p),p.state||(p.state={}),p.__n=i,m=p.__d=!0,p.__h=[],p._sb=[]),D&&p.__s==null&&(p.__s=p.state),D&&P.getDerivedStateFromProps!=null&&(p.__s==p.state&&(p.__s=y({},p.__s)),y(p.__s,P.getDerivedStateFromProps(E,p.__s))),h=p.props,_=p.state,p.__v=t,m)D&&P.getDerivedStateFromProps==null&&p.componentWillMount!=null&&p.componentWillMount(),D&&p.componentDidMount!=null&&p.__h.push(p.componentDidMount);else{if(D&&P.getDerivedStateFromProps==null&&E!==h&&p.componentWillReceiveProps!=null&&p.componentWillReceiveProps(E,k),t.__v==r.__v||!p.__e&&p.shouldComponentUpdate!=null&&!1===p.shouldComponentUpdate(E,p.__s,k)){t.__v!=r.__v&&(p.props=E,p.state=p.__s,p.__d=!1),t.__e=r.__e,t.__k=r.__k,t.__k.some(function(e){e&&(e.__=t)}),g.push.apply(p.__h,p._sb),p._sb=[],p.__h.length&&s.push(p),c=T(r);break n}p.componentWillUpdate!=null&&p.componentWillUpdate(E,p.__s,k),D&&p.componentDidUpdate!=null&&p.__h.push(function(){p.componentDidUpdate(h,_,x)})}if(p.context=k,p.props=E,p.__P=e,p.__e=!1,A=n.__r,j=0,D)p.state=p.__s,p.__d=!1,A&&A(t),d=p.render(p.props,p.state,p.context),g.push.apply(p.__h,p._sb),p._sb=[];else do p.__d=!1,A&&A(t),d=p.render(p.props,p.state,p.context),p.state=p.__s;while(p.__d&&++j<25);p.state=p.__s,p.getChildContext!=null&&(i=y(y({},i),p.getChildContext())),D&&!m&&p.getSnapshotBeforeUpdate!=null&&(x=p.getSnapshotBeforeUpdate(h,_)),M=d!=null&&d.type===C&&d.key==null?ie(d.props.children):d,c=ee(e,v(M)?M:[M],t,r,i,a,o,s,c,l,u),p.base=t.__e,t.__u&=-161,p.__h.length&&s.push(p),S&&(p.__E=p.__=null)}catch(e){if(s.length=f,t.__v=null,l||o!=null){if(e.then){for(t.__u|=l?160:128;c&&c.nodeType==8&&c.nextSibling;)c=c.nextSibling;o!=null&&(o[o.indexOf(c)]=null),t.__e=c}else if(o!=null)for(N=o.length;N--;)b(o[N])}else t.__e=r.__e;t.__k??=r.__k||[],e.then||ne(t),n.__e(e,t,r)}}else o==null&&t.__v==r.__v?(t.__k=r.__k,t.__e=r.__e):c=t.__e=ae(r.__e,t,r,i,a,o,s,l,u);return(d=n.diffed)&&d(t),128&t.__u?void 0:c}function ne(e){e&&(e.__c&&(e.__c.__e=!0),e.__k&&e.__k.some(ne))}function re(e,t,r){for(var i=0;i<r.length;i++)I(r[i],r[++i],r[++i]);n.__c&&n.__c(t,e),e.some(function(t){try{e=t.__h,t.__h=[],e.some(function(e){e.call(t)})}catch(e){n.__e(e,t.__v)}})}function ie(e){return typeof e!=`object`||!e||e.__b>0?e:v(e)?e.map(ie):e.constructor===void 0?y({},e):null}function ae(e,r,i,a,o,s,c,l,u){var d,f,p,m,g,_,y,x=i.props||h,S=r.props,C=r.type;if(C==`svg`?o=`http://www.w3.org/2000/svg`:C==`math`?o=`http://www.w3.org/1998/Math/MathML`:o||=`http://www.w3.org/1999/xhtml`,s!=null){for(d=0;d<s.length;d++)if((g=s[d])&&`setAttribute`in g==!!C&&(C?g.localName==C:g.nodeType==3)){e=g,s[d]=null;break}}if(e==null){if(C==null)return document.createTextNode(S);e=document.createElementNS(o,C,S.is&&S),l&&=(n.__m&&n.__m(r,s),!1),s=null}if(C==null)x===S||l&&e.data==S||(e.data=S);else{if(s=C==`textarea`&&S.defaultValue!=null?null:s&&t.call(e.childNodes),!l&&s!=null)for(x={},d=0;d<e.attributes.length;d++)x[(g=e.attributes[d]).name]=g.value;for(d in x)g=x[d],d==`dangerouslySetInnerHTML`?p=g:d==`children`||d in S||d==`value`&&`defaultValue`in S||d==`checked`&&`defaultChecked`in S||P(e,d,null,g,o);for(d in S)g=S[d],d==`children`?m=g:d==`dangerouslySetInnerHTML`?f=g:d==`value`?_=g:d==`checked`?y=g:l&&typeof g!=`function`||x[d]===g||P(e,d,g,x[d],o);if(f)l||p&&(f.__html==p.__html||f.__html==e.innerHTML)||(e.innerHTML=f.__html),r.__k=[];else if(p&&(e.innerHTML=``),ee(r.type==`template`?e.content:e,v(m)?m:[m],r,i,a,C==`foreignObject`?`http://www.w3.org/1999/xhtml`:o,s,c,s?s[0]:i.__k&&T(i,0),l,u),s!=null)for(d=s.length;d--;)b(s[d]);l&&C!=`textarea`||(d=`value`,C==`progress`&&_==null?e.removeAttribute(`value`):_!=null&&(_!==e[d]||C==`progress`&&!_||C==`option`&&_!=x[d])&&P(e,d,_,x[d],o),d=`checked`,y!=null&&y!=e[d]&&P(e,d,y,x[d],o))}return e}function I(e,t,r){try{if(typeof e==`function`){var i=typeof e.__u==`function`;i&&e.__u(),i&&t==null||(e.__u=e(t))}else e.current=t}catch(e){n.__e(e,r)}}function oe(e,t,r){var i,a;if(n.unmount&&n.unmount(e),(i=e.ref)&&(i.current&&i.current!=e.__e||I(i,null,t)),(i=e.__c)!=null){if(i.componentWillUnmount)try{i.componentWillUnmount()}catch(e){n.__e(e,t)}i.base=i.__P=i.__n=null}if(i=e.__k)for(a=0;a<i.length;a++)i[a]&&oe(i[a],t,r||typeof e.type!=`function`);r||b(e.__e),e.__c=e.__=e.__e=void 0}function se(e,t,n){return this.constructor(e,n)}function ce(e,r,i){var a,o,s,c;r==document&&(r=document.documentElement),n.__&&n.__(e,r),o=(a=typeof i==`function`)?null:i&&i.__k||r.__k,s=[],c=[],F(r,e=(!a&&i||r).__k=x(C,null,[e]),o||h,h,r.namespaceURI,!a&&i?[i]:o?null:r.firstChild?t.call(r.childNodes):null,s,!a&&i?i:o?o.__e:r.firstChild,a,c),re(s,e,c),e.props.children=null}t=g.slice,n={__e:function(e,t,n,r){for(var i,a,o;t=t.__;)if((i=t.__c)&&!i.__)try{if((a=i.constructor)&&a.getDerivedStateFromError!=null&&(i.setState(a.getDerivedStateFromError(e)),o=i.__d),i.componentDidCatch!=null&&(i.componentDidCatch(e,r||{}),o=i.__d),o)return i.__E=i}catch(t){e=t}throw e}},r=0,w.prototype.setState=function(e,t){var n=this.__s!=null&&this.__s!=this.state?this.__s:this.__s=y({},this.state);typeof e==`function`&&(e=e(y({},n),this.props)),e&&y(n,e),e!=null&&this.__v&&(t&&this._sb.push(t),O(this))},w.prototype.forceUpdate=function(e){this.__v&&(this.__e=!0,e&&this.__h.push(e),O(this))},w.prototype.render=C,i=[],o=typeof Promise==`function`?Promise.prototype.then.bind(Promise.resolve()):setTimeout,s=function(e,t){return e.__v.__b-t.__v.__b},k.__r=0,c=Math.random().toString(8),l=`__d`+c,u=`__a`+c,d=/(PointerCapture)$|Capture$/i,f=0,p=te(!1),m=te(!0);var L,R,z,le,ue=0,de=[],B=n,fe=B.__b,pe=B.__r,me=B.diffed,he=B.__c,ge=B.unmount,_e=B.__;function ve(e,t){B.__h&&B.__h(R,e,ue||t),ue=0;var n=R.__H||(R.__H={__:[],__h:[]});return e>=n.__.length&&n.__.push({}),n.__[e]}function V(e){return ue=1,ye(we,e)}function ye(e,t,n){var r=ve(L++,2);if(r.t=e,!r.__c&&(r.__=[n?n(t):we(void 0,t),function(e){var t=r.__N?r.__N[0]:r.__[0],n=r.t(t,e);t!==n&&(r.__N=[n,r.__[1]],r.__c.setState({}))}],r.__c=R,!R.__f)){var i=function(e,t,n){if(!r.__c.__H)return!0;var i=!1,o=r.__c.props!==e;if(r.__c.__H.__.some(function(e){if(e.__N){i=!0;var t=e.__[0];e.__=e.__N,e.__N=void 0,t!==e.__[0]&&(o=!0)}}),a){var s=a.call(this,e,t,n);return i?s||o:s}return!i||o};R.__f=!0;var a=R.shouldComponentUpdate,o=R.componentWillUpdate;R.componentWillUpdate=function(e,t,n){if(this.__e){var r=a;a=void 0,i(e,t,n),a=r}o&&o.call(this,e,t,n)},R.shouldComponentUpdate=i}return r.__N||r.__}function H(e,t){var n=ve(L++,3);!B.__s&&Ce(n.__H,t)&&(n.__=e,n.u=t,R.__H.__h.push(n))}function be(){for(var e;e=de.shift();){var t=e.__H;if(e.__P&&t)try{t.__h.some(U),t.__h.some(W),t.__h=[]}catch(n){t.__h=[],B.__e(n,e.__v)}}}B.__b=function(e){R=null,fe&&fe(e)},B.__=function(e,t){e&&t.__k&&t.__k.__m&&(e.__m=t.__k.__m),_e&&_e(e,t)},B.__r=function(e){pe&&pe(e),L=0;var t=(R=e.__c).__H;t&&(z===R?(t.__h=[],R.__h=[],t.__.some(function(e){e.__N&&(e.__=e.__N),e.u=e.__N=void 0})):(t.__h.some(U),t.__h.some(W),t.__h=[],L=0)),z=R},B.diffed=function(e){me&&me(e);var t=e.__c;t&&t.__H&&(t.__H.__h.length&&(de.push(t)!==1&&le===B.requestAnimationFrame||((le=B.requestAnimationFrame)||Se)(be)),t.__H.__.some(function(e){e.u&&=(e.__H=e.u,void 0)})),z=R=null},B.__c=function(e,t){t.some(function(e){try{e.__h.some(U),e.__h=e.__h.filter(function(e){return!e.__||W(e)})}catch(n){t.some(function(e){e.__h&&=[]}),t=[],B.__e(n,e.__v)}}),he&&he(e,t)},B.unmount=function(e){ge&&ge(e);var t,n=e.__c;n&&n.__H&&(n.__H.__.some(function(e){try{U(e)}catch(e){t=e}}),n.__H=void 0,t&&B.__e(t,n.__v))};var xe=typeof requestAnimationFrame==`function`;function Se(e){var t,n=function(){clearTimeout(r),xe&&cancelAnimationFrame(t),setTimeout(e)},r=setTimeout(n,35);xe&&(t=requestAnimationFrame(n))}function U(e){var t=R,n=e.__c;typeof n==`function`&&(e.__c=void 0,n()),R=t}function W(e){var t=R;e.__c=e.__(),R=t}function Ce(e,t){return!e||e.length!==t.length||t.some(function(t,n){return t!==e[n]})}function we(e,t){return typeof t==`function`?t(e):t}var G=class extends String{__apiType;value;__meta__;constructor(e,t){super(e),this.value=e,this.__meta__=t}toString(){return this.value}},Te=new G(`
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
    `,{fragmentName:`ConsoleClusterRow`}),Ee=new G(`
    fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}
    `,{fragmentName:`ConsoleProjectCard`}),De=new G(`
    fragment ConsoleTenantSection on Tenant {
  id
  name
  viewerRole
  clusters(first: 25) {
    nodes {
      ...ConsoleClusterRow
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
  projects(first: 10) {
    nodes {
      ...ConsoleProjectCard
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}`,{fragmentName:`ConsoleTenantSection`}),Oe={"\n  query ConsoleAccount {\n    viewer {\n      user { email }\n      tenants(first: 5) { nodes { id name } }\n      sessions(first: 100) {\n        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }\n        pageInfo { hasNextPage }\n      }\n    }\n  }\n":new G(`
    query ConsoleAccount {
  viewer {
    user {
      email
    }
    tenants(first: 5) {
      nodes {
        id
        name
      }
    }
    sessions(first: 100) {
      nodes {
        id
        method
        address
        userAgent
        createdAt
        lastSeenAt
        current
        tenants {
          name
        }
      }
      pageInfo {
        hasNextPage
      }
    }
  }
}
    `,{hash:`sha256:65ac1ce6dbdc82d2fe47372c10e84507e4126c35526237fc321e397a526af000`}),"\n  mutation ConsoleRevokeSession($id: ID!) {\n    revokeSession(input: { sessionId: $id }) {\n      revokedSessionId\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleRevokeSession($id: ID!) {
  revokeSession(input: {sessionId: $id}) {
    revokedSessionId
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:a465cb30d27ba71cf121f615ad873bb8de1fb058e604b7c806e016a135364548`}),"\n  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {\n    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {\n      secret\n      apiToken { prefix expiresAt }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {
  createApiToken(input: {name: $name, tenantId: $tenant, expiresInDays: $days}) {
    secret
    apiToken {
      prefix
      expiresAt
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:056ae922731f13641d781f122acf1954de23070f55585ab2a0fb328c113f44b5`}),"\n  query ConsoleApprovals {\n    viewer {\n      tenants(first: 5) {\n        nodes {\n          id\n          name\n          approvalQueue(first: 50) {\n            nodes {\n              id stage createdAt approvalExpiresAt\n              requestedBy { email }\n              release { number service { name } }\n              environment { name project { name } }\n            }\n            pageInfo { hasNextPage }\n          }\n        }\n      }\n    }\n  }\n":new G(`
    query ConsoleApprovals {
  viewer {
    tenants(first: 5) {
      nodes {
        id
        name
        approvalQueue(first: 50) {
          nodes {
            id
            stage
            createdAt
            approvalExpiresAt
            requestedBy {
              email
            }
            release {
              number
              service {
                name
              }
            }
            environment {
              name
              project {
                name
              }
            }
          }
          pageInfo {
            hasNextPage
          }
        }
      }
    }
  }
}
    `,{hash:`sha256:d99c0e6b70c8fa6c0fb432ef64160c77f9540ff039a6b6a34fe2124ac7fb2873`}),"\n  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {\n    node(id: $tenant) {\n      ... on Tenant {\n        name\n        auditEvents(first: 25, after: $after, filter: $filter) {\n          nodes { id action targetType createdAt clientAddress actor { email } details }\n          pageInfo { hasNextPage endCursor }\n        }\n      }\n    }\n  }\n":new G(`
    query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {
  node(id: $tenant) {
    ... on Tenant {
      name
      auditEvents(first: 25, after: $after, filter: $filter) {
        nodes {
          id
          action
          targetType
          createdAt
          clientAddress
          actor {
            email
          }
          details
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    `,{hash:`sha256:06db8f7e9c69bb87fa0d1c3eda33135fae5385f47ace77f138b2b6c4e9bdbd7b`}),"\n  query ConsoleBuild($id: ID!) {\n    node(id: $id) {\n      ... on Build {\n        id status message commit branch imageDigest attempts startedAt finishedAt\n        cluster { name }\n        log(first: 1) { truncated }\n      }\n    }\n  }\n":new G(`
    query ConsoleBuild($id: ID!) {
  node(id: $id) {
    ... on Build {
      id
      status
      message
      commit
      branch
      imageDigest
      attempts
      startedAt
      finishedAt
      cluster {
        name
      }
      log(first: 1) {
        truncated
      }
    }
  }
}
    `,{hash:`sha256:010ca3c4f25bedac3612cddf0df0e8a280c8a3cb51e696816d4d241db7737b12`}),"\n  subscription ConsoleBuildLog($id: ID!, $after: Int) {\n    buildLog(buildId: $id, after: $after) { number at text }\n  }\n":new G(`
    subscription ConsoleBuildLog($id: ID!, $after: Int) {
  buildLog(buildId: $id, after: $after) {
    number
    at
    text
  }
}
    `,{hash:`sha256:fb6bea2210584c169c1af85cc73fa8b54313a053399457a3b7846ed8e5ad002a`}),"\n  query ConsoleCliLogin($code: String!) {\n    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }\n    viewer { tenants(first: 20) { nodes { id name } } }\n  }\n":new G(`
    query ConsoleCliLogin($code: String!) {
  cliLogin(code: $code) {
    code
    clientAddress
    userAgent
    createdAt
    expiresAt
  }
  viewer {
    tenants(first: 20) {
      nodes {
        id
        name
      }
    }
  }
}
    `,{hash:`sha256:6998a3d218fa63828e934c109f8e486a52704cce5f31c8b506c00048b6e415f5`}),"\n  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {\n    approveCliLogin(input: { code: $code, tenantId: $tenant }) {\n      apiToken { name expiresAt }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {
  approveCliLogin(input: {code: $code, tenantId: $tenant}) {
    apiToken {
      name
      expiresAt
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:007931239d8a927e8c50b226ee0743b8ea120ccd99ef3c6f059b299e9e9a499a`}),"\n  query ConsoleCluster($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        id name status lastHeartbeatAge desiredRevision appliedRevision\n        labels { key value }\n        tenant { viewerRole }\n        activeRevision { number confirmed reportedAt }\n        inventory {\n          agentVersion kubernetesVersion capabilities\n          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }\n          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }\n        }\n        install { command }\n      }\n    }\n  }\n":new G(`
    query ConsoleCluster($id: ID!) {
  node(id: $id) {
    ... on Cluster {
      id
      name
      status
      lastHeartbeatAge
      desiredRevision
      appliedRevision
      labels {
        key
        value
      }
      tenant {
        viewerRole
      }
      activeRevision {
        number
        confirmed
        reportedAt
      }
      inventory {
        agentVersion
        kubernetesVersion
        capabilities
        nodes(first: 100) {
          nodes {
            name
            ready
          }
          pageInfo {
            hasNextPage
          }
        }
        workloads(first: 100) {
          nodes {
            namespace
            name
            replicas
            readyReplicas
          }
          pageInfo {
            hasNextPage
          }
        }
      }
      install {
        command
      }
    }
  }
}
    `,{hash:`sha256:33dc2f717b198a3df5ce93b4985a909acf82556cab5fec371619af5ee8268d08`}),"\n  query ConsoleClusterRevisions($id: ID!) {\n    node(id: $id) {\n      ... on Cluster {\n        revisions(first: 10) {\n          nodes {\n            number hash createdAt\n            cause { action actor { email } }\n            outcomes { agent result at }\n          }\n          pageInfo { hasNextPage }\n        }\n      }\n    }\n  }\n":new G(`
    query ConsoleClusterRevisions($id: ID!) {
  node(id: $id) {
    ... on Cluster {
      revisions(first: 10) {
        nodes {
          number
          hash
          createdAt
          cause {
            action
            actor {
              email
            }
          }
          outcomes {
            agent
            result
            at
          }
        }
        pageInfo {
          hasNextPage
        }
      }
    }
  }
}
    `,{hash:`sha256:5c4598402aa68fc16ba66ab3f80b10a9ca1a96905c7436d9fed9bf4046547323`}),"\n  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {\n    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {\n      secret\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleRegenerateToken($id: ID!, $name: String!) {
  regenerateConnectToken(input: {clusterId: $id, confirmName: $name}) {
    secret
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:c2027ebc61d6dc4aabfa7feb832e9570d0c1c8079d1872cf3cca74bf4185583c`}),"\n  query ConsolePreviewDeploy($input: DeployInput!) {\n    previewDeploy(input: $input) {\n      clusters {\n        cluster { name }\n        fromRevision\n        added { kind namespace name }\n        changed { kind namespace name }\n        removed { kind namespace name }\n        nowHeld { service reason }\n        released { service }\n      }\n      userErrors { field message code }\n    }\n  }\n":new G(`
    query ConsolePreviewDeploy($input: DeployInput!) {
  previewDeploy(input: $input) {
    clusters {
      cluster {
        name
      }
      fromRevision
      added {
        kind
        namespace
        name
      }
      changed {
        kind
        namespace
        name
      }
      removed {
        kind
        namespace
        name
      }
      nowHeld {
        service
        reason
      }
      released {
        service
      }
    }
    userErrors {
      field
      message
      code
    }
  }
}
    `,{hash:`sha256:9cf2e9b5eb6808a659c2f40c0bdf9fe7ad5d9bc5d13e1aba7114081f686b1160`}),"\n  mutation ConsoleDeploy($input: DeployInput!) {\n    deploy(input: $input) {\n      deployment { id stage }\n      userErrors { field message code }\n    }\n  }\n":new G(`
    mutation ConsoleDeploy($input: DeployInput!) {
  deploy(input: $input) {
    deployment {
      id
      stage
    }
    userErrors {
      field
      message
      code
    }
  }
}
    `,{hash:`sha256:3ca9e7e502b86e7fc9218495f6fba0a258ca2fbd23f32dcc1448cbc83adee648`}),"\n  mutation ConsoleApprove($id: ID!) {\n    approveDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleApprove($id: ID!) {
  approveDeployment(input: {deploymentId: $id}) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:2a9457114e821ab8f2eb05ec3409c8674411626206a476bbe3f4f3cc321a461d`}),"\n  mutation ConsoleReject($id: ID!) {\n    rejectDeployment(input: { deploymentId: $id }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleReject($id: ID!) {
  rejectDeployment(input: {deploymentId: $id}) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:fc5ba373ecf3a0e4675eaa24b8085168f52bb62c0b0c7713cb2fca68e6cd14ce`}),'\n  mutation ConsoleCancel($id: ID!) {\n    cancelDeployment(input: { deploymentId: $id, reason: "cancelled from the console" }) {\n      deployment { id stage }\n      userErrors { message }\n    }\n  }\n':new G(`
    mutation ConsoleCancel($id: ID!) {
  cancelDeployment(
    input: {deploymentId: $id, reason: "cancelled from the console"}
  ) {
    deployment {
      id
      stage
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:9966ffc1243bd31623191c6a4cac907bbe55f6c1bfe662e71accec27d2fb33cd`}),"\n  mutation ConsoleRedeploy($id: ID!) {\n    redeploy(input: { deploymentId: $id }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleRedeploy($id: ID!) {
  redeploy(input: {deploymentId: $id}) {
    deployment {
      id
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:cd99bb9117fc5d24ccedd54efda790f04731981061a4cbe7f3089a638d03aa9b`}),"\n  query ConsoleDeployment($id: ID!) {\n    node(id: $id) {\n      ... on Deployment {\n        id stage blocker message createdAt approvalExpiresAt\n        requestedBy { email }\n        release { number imageDigest service { id name } }\n        build { id }\n        environment { id name protected project { name viewerRole tenant { viewerRole } } }\n        cluster { id name }\n      }\n    }\n  }\n":new G(`
    query ConsoleDeployment($id: ID!) {
  node(id: $id) {
    ... on Deployment {
      id
      stage
      blocker
      message
      createdAt
      approvalExpiresAt
      requestedBy {
        email
      }
      release {
        number
        imageDigest
        service {
          id
          name
        }
      }
      build {
        id
      }
      environment {
        id
        name
        protected
        project {
          name
          viewerRole
          tenant {
            viewerRole
          }
        }
      }
      cluster {
        id
        name
      }
    }
  }
}
    `,{hash:`sha256:60202c1bd22d6ae4eae0b70817feed12ef2341c694d60f5998ed535cd9b7fea4`}),"\n  subscription DeploymentEvents($id: ID!, $after: String) {\n    deploymentEvents(deploymentId: $id, after: $after) {\n      cursor sequence stage blocker message at\n    }\n  }\n":new G(`
    subscription DeploymentEvents($id: ID!, $after: String) {
  deploymentEvents(deploymentId: $id, after: $after) {
    cursor
    sequence
    stage
    blocker
    message
    at
  }
}
    `,{hash:`sha256:a8cbdad7035c151810422902e132231d52dbbcbca8f7d34fbef55b4e3b22a688`}),"\n  query ConsoleEnvironment($id: ID!) {\n    node(id: $id) {\n      ... on Environment {\n        id name protected\n        clusterSelector { key value }\n        namespaceSelector { key value }\n        placement { cluster { id name } namespace problem }\n        eligibleClusters(first: 10) { nodes { name } }\n        variables { id name scope secret value status statusReason }\n        project {\n          name viewerRole\n          tenant { viewerRole }\n          services(first: 20) {\n            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }\n          }\n        }\n        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }\n      }\n    }\n  }\n":new G(`
    query ConsoleEnvironment($id: ID!) {
  node(id: $id) {
    ... on Environment {
      id
      name
      protected
      clusterSelector {
        key
        value
      }
      namespaceSelector {
        key
        value
      }
      placement {
        cluster {
          id
          name
        }
        namespace
        problem
      }
      eligibleClusters(first: 10) {
        nodes {
          name
        }
      }
      variables {
        id
        name
        scope
        secret
        value
        status
        statusReason
      }
      project {
        name
        viewerRole
        tenant {
          viewerRole
        }
        services(first: 20) {
          nodes {
            id
            name
            releases(first: 5, environmentId: $id) {
              nodes {
                number
                imageDigest
                createdAt
              }
            }
          }
        }
      }
      deployments(first: 10) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
  }
}
    `,{hash:`sha256:815d537e4af4d6ac03492571a2a1fa2cb170c8320fe1dcf6d7b288920579ba68`}),"\n  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {\n    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {\n      deployment { id }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {
  rollback(
    input: {serviceId: $service, environmentId: $env, releaseNumber: $number}
  ) {
    deployment {
      id
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:528bef26b8dc4e927d3195ada7decd315acb17f13c3aaaeaaa20b5c3a819f5c0`}),"\n  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {\n    node(id: $service) {\n      ... on Service {\n        name\n        logs(environmentId: $env, filter: $filter, last: 200) {\n          nodes { number at stream text pod }\n        }\n      }\n    }\n  }\n":new G(`
    query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {
  node(id: $service) {
    ... on Service {
      name
      logs(environmentId: $env, filter: $filter, last: 200) {
        nodes {
          number
          at
          stream
          text
          pod
        }
      }
    }
  }
}
    `,{hash:`sha256:60588f64c0a3bbb903e10431355891159f4719c84e36231d43c496ad20eb652d`}),"\n  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {\n    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {\n      number at stream text pod\n    }\n  }\n":new G(`
    subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {
  serviceLogs(
    serviceId: $service
    environmentId: $env
    after: $after
    filter: $filter
  ) {
    number
    at
    stream
    text
    pod
  }
}
    `,{hash:`sha256:6b6cce8c59cdd890d19b2c67b50e40c1b0379930687c289345fae3bbdbe1ffd3`}),"\n  fragment ConsoleClusterRow on Cluster {\n    id name status lastHeartbeatAge desiredRevision appliedRevision\n    activeRevision { number confirmed }\n  }\n":Te,"\n  fragment ConsoleProjectCard on Project {\n    id name viewerRole\n    services(first: 20) { nodes { id name git { branch } } }\n    environments(first: 10) {\n      nodes {\n        id name protected\n        deployments(first: 3) {\n          nodes { id stage createdAt release { number service { name } } }\n        }\n      }\n      pageInfo { hasNextPage }\n    }\n  }\n":Ee,"\n  fragment ConsoleTenantSection on Tenant {\n    id name viewerRole\n    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }\n    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }\n  }\n":De,"\n  query ConsoleOverview($after: String) {\n    viewer {\n      user { email name }\n      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }\n    }\n  }\n":new G(`
    query ConsoleOverview($after: String) {
  viewer {
    user {
      email
      name
    }
    tenants(first: 5, after: $after) {
      nodes {
        ...ConsoleTenantSection
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}
fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}
fragment ConsoleTenantSection on Tenant {
  id
  name
  viewerRole
  clusters(first: 25) {
    nodes {
      ...ConsoleClusterRow
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
  projects(first: 10) {
    nodes {
      ...ConsoleProjectCard
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}`,{hash:`sha256:2e10847856eed4d587b98e87a99b580ba2936a623514524facdc2ec39ad773d1`}),"\n  query ConsoleMoreClusters($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n":new G(`
    query ConsoleMoreClusters($tenant: ID!, $after: String) {
  node(id: $tenant) {
    ... on Tenant {
      clusters(first: 25, after: $after) {
        nodes {
          ...ConsoleClusterRow
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    fragment ConsoleClusterRow on Cluster {
  id
  name
  status
  lastHeartbeatAge
  desiredRevision
  appliedRevision
  activeRevision {
    number
    confirmed
  }
}`,{hash:`sha256:f85f16a616297a8ad3829c0b4a5c208a8456cd941c756c8b602743459a0c3e55`}),"\n  query ConsoleMoreProjects($tenant: ID!, $after: String) {\n    node(id: $tenant) {\n      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }\n    }\n  }\n":new G(`
    query ConsoleMoreProjects($tenant: ID!, $after: String) {
  node(id: $tenant) {
    ... on Tenant {
      projects(first: 10, after: $after) {
        nodes {
          ...ConsoleProjectCard
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    fragment ConsoleProjectCard on Project {
  id
  name
  viewerRole
  services(first: 20) {
    nodes {
      id
      name
      git {
        branch
      }
    }
  }
  environments(first: 10) {
    nodes {
      id
      name
      protected
      deployments(first: 3) {
        nodes {
          id
          stage
          createdAt
          release {
            number
            service {
              name
            }
          }
        }
      }
    }
    pageInfo {
      hasNextPage
    }
  }
}`,{hash:`sha256:3ef740377604b07e367a05185ecd307caf8a3df5b2f60cf89ec6704c44836b92`}),"\n  query ConsolePeople($tenant: ID!) {\n    node(id: $tenant) {\n      ... on Tenant {\n        id name\n        members(first: 100) { nodes { id role user { email name kind } } }\n        invitations(first: 20) { nodes { id email status expiresAt } }\n      }\n    }\n  }\n":new G(`
    query ConsolePeople($tenant: ID!) {
  node(id: $tenant) {
    ... on Tenant {
      id
      name
      members(first: 100) {
        nodes {
          id
          role
          user {
            email
            name
            kind
          }
        }
      }
      invitations(first: 20) {
        nodes {
          id
          email
          status
          expiresAt
        }
      }
    }
  }
}
    `,{hash:`sha256:4d938f9058ab04c1c6c21939adc19b62a6e7327e728da9dc8b3363eb2503ec2e`}),"\n  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {\n    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {\n      link\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {
  inviteMember(
    input: {tenantId: $tenant, email: $email, name: $name, role: $role}
  ) {
    link
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:2596e7ed3a23df4544319db243eb4df907ab6c1672bf3dc017256a923b887d65`}),"\n  mutation ConsoleRevokeInvitation($id: ID!) {\n    revokeInvitation(input: { invitationId: $id }) {\n      invitation { id status }\n      userErrors { message }\n    }\n  }\n":new G(`
    mutation ConsoleRevokeInvitation($id: ID!) {
  revokeInvitation(input: {invitationId: $id}) {
    invitation {
      id
      status
    }
    userErrors {
      message
    }
  }
}
    `,{hash:`sha256:c0bc857661a0d505402c9031370961495e1303d99c9edc7ff9345ebbe24225d4`}),"\n  query ConsoleAdminTenants {\n    viewer { tenants(first: 5) { nodes { id name viewerRole } } }\n  }\n":new G(`
    query ConsoleAdminTenants {
  viewer {
    tenants(first: 5) {
      nodes {
        id
        name
        viewerRole
      }
    }
  }
}
    `,{hash:`sha256:647cf5cbfd0214f653ea645aec1b2081ab6b10938620ed4ed712cff8c57c39aa`})};function K(e){return Oe[e]??{}}var ke=class extends Error{code;constructor(e,t){super(e),this.code=t}};async function q(e,t){let n=(e.__meta__?.hash)?.replace(/^sha256:/,``),r=n?{version:1,sha256Hash:n}:void 0,i=await Ae(r?{variables:t,extensions:{persistedQuery:r}}:{query:e.toString(),variables:t}),a=await i.clone().json().catch(()=>({}));if(a.errors?.[0]?.extensions?.code===`PERSISTED_QUERY_NOT_FOUND`&&(i=await Ae({query:e.toString(),variables:t})),i.status===401)throw window.location.assign(`/signin`+(window.location.hash.startsWith(`#/`)?window.location.hash:``)),new ke(`signed out`,`UNAUTHENTICATED`);if(a=await i.json(),a.errors?.length){let e=a.errors[0];throw new ke(e.message,e.extensions?.code??`ERROR`)}return a.data}function Ae(e){return fetch(`/graphql`,{method:`POST`,credentials:`same-origin`,headers:{"Content-Type":`application/json`,Accept:`application/graphql-response+json, application/json`},body:JSON.stringify(e)})}var J=null;function je(){if(!J){let t=new URL(`/graphql`,window.location.href);t.protocol=t.protocol===`https:`?`wss:`:`ws:`,J=e({url:t.href,lazy:!0,retryAttempts:0,connectionParams:{}})}return J}function Y(e,t,n,r){let i=!1,a=null,o=0,s=()=>{i||(r(!0),a=je().subscribe({query:e.toString(),variables:t()},{next:e=>{o=0,e.data&&n(e.data)},error:e=>{if(i)return;r(!1,e instanceof Error?e.message:`connection lost`),J=null;let t=Math.min(1e4,500*2**o++)*(.5+Math.random()/2);setTimeout(s,t)},complete:()=>r(!1,`ended`)}))};return s(),()=>{i=!0,a?.()}}var Me=function(e,t,n,r){var i;t[0]=0;for(var a=1;a<t.length;a++){var o=t[a++],s=t[a]?(t[0]|=o?1:2,n[t[a++]]):t[++a];o===3?r[0]=s:o===4?r[1]=Object.assign(r[1]||{},s):o===5?(r[1]=r[1]||{})[t[++a]]=s:o===6?r[1][t[++a]]+=s+``:o?(i=e.apply(s,Me(e,s,n,[``,null])),r.push(i),s[0]?t[0]|=2:(t[a-2]=0,t[a]=i)):r.push(s)}return r},Ne=new Map;function Pe(e){var t=Ne.get(this);return t||(t=new Map,Ne.set(this,t)),(t=Me(this,t.get(e)||(t.set(e,t=function(e){for(var t,n,r=1,i=``,a=``,o=[0],s=function(e){r===1&&(e||(i=i.replace(/^\s*\n\s*|\s*\n\s*$/g,``)))?o.push(0,e,i):r===3&&(e||i)?(o.push(3,e,i),r=2):r===2&&i===`...`&&e?o.push(4,e,0):r===2&&i&&!e?o.push(5,0,!0,i):r>=5&&((i||!e&&r===5)&&(o.push(r,0,i,n),r=6),e&&(o.push(r,e,0,n),r=6)),i=``},c=0;c<e.length;c++){c&&(r===1&&s(),s(c));for(var l=0;l<e[c].length;l++)t=e[c][l],r===1?t===`<`?(s(),o=[o],r=3):i+=t:r===4?i===`--`&&t===`>`?(r=1,i=``):i=t+i[0]:a?t===a?a=``:i+=t:t===`"`||t===`'`?a=t:t===`>`?(s(),r=1):r&&(t===`=`?(r=5,n=i,i=``):t===`/`&&(r<5||e[c][l+1]===`>`)?(s(),r===3&&(o=o[0]),r=o,(o=o[0]).push(2,0,r),r=0):t===` `||t===`	`||t===`
`||t===`\r`?(s(),r=2):i+=t),r===3&&i===`!--`&&(r=4,o=o[0])}return s(),o}(e)),t),arguments,[])).length>1?t:t[0]}var Fe=K(`
  query ConsoleAdminTenants {
    viewer { tenants(first: 5) { nodes { id name viewerRole } } }
  }
`),X=Pe.bind(x);function Ie(e){return e==null?`never`:e<60?`${e} s ago`:e<3600?`${Math.round(e/60)} min ago`:`${Math.round(e/3600)} h ago`}function Le(e,t,n){return e===`ADMIN`||t===`PROJECT_MANAGER`||t===`EDITOR`&&!n}function Re(e,t){return e===`ADMIN`||t===`PROJECT_MANAGER`}function Z(e){return e.map(e=>e.message).join(`; `)}function Q({error:e}){return X`<p role="alert" class="problem">${e}</p>`}var ze=K(`
  query ConsoleAccount {
    viewer {
      user { email }
      tenants(first: 5) { nodes { id name } }
      sessions(first: 100) {
        nodes { id method address userAgent createdAt lastSeenAt current tenants { name } }
        pageInfo { hasNextPage }
      }
    }
  }
`),Be=K(`
  mutation ConsoleRevokeSession($id: ID!) {
    revokeSession(input: { sessionId: $id }) {
      revokedSessionId
      userErrors { message }
    }
  }
`),Ve=K(`
  mutation ConsoleCreateToken($name: String!, $tenant: ID, $days: Int) {
    createApiToken(input: { name: $name, tenantId: $tenant, expiresInDays: $days }) {
      secret
      apiToken { prefix expiresAt }
      userErrors { message }
    }
  }
`);function He(){let[e,t]=V(null),[n,r]=V(``),i=()=>q(ze).then(t,e=>r(e.message));if(H(()=>{i()},[]),n)return X`<${Q} error=${n} />`;if(!e)return X`<p aria-busy="true">Loading…</p>`;let a=async e=>{let t=await q(Be,{id:e});t.revokeSession.userErrors.length?r(Z(t.revokeSession.userErrors)):i()};return X`
    <h1>Your account</h1>
    <h2>Personal API token</h2>
    <${Ue} tenants=${e.viewer.tenants.nodes} />
    <h2>Your sign-ins</h2>
    <p class="muted">${e.viewer.user.email} · <button type="button" class="small" onClick=${async()=>{await fetch(`/auth/signout`,{method:`POST`,headers:{"Content-Type":`application/json`},body:`{}`}),window.location.assign(`/signin`)}}>Sign out</button></p>
    <table tabindex="0">
      <thead><tr><th scope="col">Since</th><th scope="col">Last seen</th><th scope="col">From</th><th scope="col">Tenants</th><th scope="col"></th></tr></thead>
      <tbody>
        ${e.viewer.sessions.nodes.map(e=>X`<tr>
            <td>${new Date(e.createdAt).toLocaleString()} <span class="muted">(${e.method.toLowerCase()})</span></td>
            <td>${new Date(e.lastSeenAt).toLocaleString()}</td>
            <td>${e.address} <span class="muted">${e.userAgent.slice(0,40)}</span></td>
            <td>${e.tenants.map(e=>e.name).join(`, `)}</td>
            <td>${e.current?X`<span class="badge">this browser</span>`:X`<button type="button" class="small secondary" onClick=${()=>a(e.id)}>End</button>`}</td>
          </tr>`)}
      </tbody>
    </table>
    ${e.viewer.sessions.pageInfo.hasNextPage?X`<p class="muted">Your 100 newest sign-ins are shown: end some of these to see the older ones.</p>`:``}
  `}function Ue({tenants:e}){let[t,n]=V(``),[r,i]=V(e[0]?.id??``),[a,o]=V(``),[s,c]=V(``);return a?X`<p role="status">Your new token, shown only now (it expires in 90 days): <code data-testid="token">${a}</code></p>`:X`<form class="deploy" aria-label="Make a personal API token" onSubmit=${async e=>{e.preventDefault(),c(``);let n=(await q(Ve,{name:t,tenant:r,days:90})).createApiToken;n.userErrors.length||!n.secret?c(Z(n.userErrors)):o(n.secret)}}>
    <label for="tok-name">Token name</label>
    <input id="tok-name" value=${t} required placeholder="laptop" onInput=${e=>n(e.target.value)} />
    <label for="tok-tenant">Tenant</label>
    <select id="tok-tenant" value=${r} onChange=${e=>i(e.target.value)}>
      ${e.map(e=>X`<option value=${e.id}>${e.name}</option>`)}
    </select>
    <button type="submit">Make token</button>
    ${s?X`<p role="alert" class="problem">${s}</p>`:``}
  </form>`}var We=K(`
  query ConsoleApprovals {
    viewer {
      tenants(first: 5) {
        nodes {
          id
          name
          approvalQueue(first: 50) {
            nodes {
              id stage createdAt approvalExpiresAt
              requestedBy { email }
              release { number service { name } }
              environment { name project { name } }
            }
            pageInfo { hasNextPage }
          }
        }
      }
    }
  }
`);function Ge(){let[e,t]=V(null),[n,r]=V(``);if(H(()=>{q(We).then(t,e=>r(e.message))},[]),n)return X`<${Q} error=${n} />`;if(!e)return X`<p aria-busy="true">Loading…</p>`;let i=e.viewer.tenants.nodes.flatMap(e=>e.approvalQueue.nodes.map(t=>({t:e,d:t}))),a=e.viewer.tenants.nodes.some(e=>e.approvalQueue.pageInfo.hasNextPage);return X`
    <h1>Approvals</h1>
    ${i.length===0?X`<p>Nothing waits for an approval.</p>`:``}
    ${a?X`<p class="muted">The 50 oldest of each tenant are shown: decide on these to see the rest.</p>`:``}
    <ul class="approvals">
      ${i.map(({t:e,d:t})=>X`<li>
          <a href=${`#/deployments/`+t.id}>${t.release.service.name} release ${t.release.number} → ${t.environment.name}</a>
          <span class="muted">${e.name} · ${t.environment.project.name} · requested by ${t.requestedBy?.email??`someone`}
            ${t.approvalExpiresAt?X` · until ${new Date(t.approvalExpiresAt).toLocaleString()}`:``}</span>
        </li>`)}
    </ul>
  `}var Ke=K(`
  query ConsoleAudit($tenant: ID!, $after: String, $filter: AuditEventFilter) {
    node(id: $tenant) {
      ... on Tenant {
        name
        auditEvents(first: 25, after: $after, filter: $filter) {
          nodes { id action targetType createdAt clientAddress actor { email } details }
          pageInfo { hasNextPage endCursor }
        }
      }
    }
  }
`);function qe(){let[e,t]=V(null),[n,r]=V(``),[i,a]=V(``),[o,s]=V(``),[c,l]=V([]),[u,d]=V(null),[f,p]=V(``);H(()=>{q(Fe).then(e=>{let n=e.viewer.tenants.nodes.filter(e=>e.viewerRole===`ADMIN`);t(n),n.length&&r(n[0].id)},e=>p(e.message))},[]);let m=async e=>{p(``);let t={};i.trim()&&(t.action=i.trim()),o&&(t.since=new Date(o).toISOString());try{let r=await q(Ke,{tenant:n,after:e,filter:t}),i=r.node&&`auditEvents`in r.node?r.node.auditEvents:null;if(!i)return;l(e?[...c,...i.nodes]:i.nodes),d(i.pageInfo.hasNextPage?i.pageInfo.endCursor??null:null)}catch(e){p(e.message)}};return H(()=>{n&&m(null)},[n]),f?X`<${Q} error=${f} />`:e?e.length?X`
    <h1>Audit</h1>
    <form class="deploy" aria-label="Filter the audit history" onSubmit=${e=>{e.preventDefault(),m(null)}}>
      <label for="audit-tenant">Tenant</label>
      <select id="audit-tenant" value=${n} onChange=${e=>r(e.target.value)}>
        ${e.map(e=>X`<option value=${e.id}>${e.name}</option>`)}
      </select>
      <label for="audit-action">Action</label>
      <input id="audit-action" value=${i} placeholder="e.g. deployment.create" onInput=${e=>a(e.target.value)} />
      <label for="audit-since">Since</label>
      <input id="audit-since" type="datetime-local" value=${o} onInput=${e=>s(e.target.value)} />
      <button type="submit">Filter</button>
    </form>
    <table tabindex="0">
      <thead><tr><th scope="col">When</th><th scope="col">Action</th><th scope="col">By</th><th scope="col">From</th></tr></thead>
      <tbody>
        ${c.map(e=>X`<tr data-action=${e.action}>
            <td>${new Date(e.createdAt).toLocaleString()}</td>
            <td>${e.action} <span class="muted">${e.targetType}</span></td>
            <td>${e.actor?.email??`the control plane`}</td>
            <td>${e.clientAddress}</td>
          </tr>`)}
      </tbody>
    </table>
    ${u?X`<p><button type="button" class="secondary" onClick=${()=>m(u)}>More</button></p>`:``}
  `:X`<h1>Audit</h1><p>The audit history is for tenant admins.</p>`:X`<p aria-busy="true">Loading…</p>`}var Je=K(`
  query ConsoleCliLogin($code: String!) {
    cliLogin(code: $code) { code clientAddress userAgent createdAt expiresAt }
    viewer { tenants(first: 20) { nodes { id name } } }
  }
`),Ye=K(`
  mutation ConsoleApproveCliLogin($code: String!, $tenant: ID!) {
    approveCliLogin(input: { code: $code, tenantId: $tenant }) {
      apiToken { name expiresAt }
      userErrors { message }
    }
  }
`);function Xe({code:e}){let[t,n]=V(null),[r,i]=V(``),[a,o]=V(``),[s,c]=V(``);if(H(()=>{q(Je,{code:e}).then(e=>{n(e),i(e.viewer.tenants.nodes[0]?.id??``)},e=>o(e.message))},[e]),a&&!t)return X`<${Q} error=${a} />`;if(!t)return X`<p aria-busy="true">Loading…</p>`;let l=t.cliLogin;return s?X`<h1>The CLI is signed in</h1><p role="status">${s} Go back to your terminal.</p>`:l?X`
    <h1>Sign in the CLI</h1>
    <p>A <code>nebula</code> CLI asks to act as you. Confirm only if your terminal shows this code:</p>
    <p class="code" data-testid="code"><strong>${l.code}</strong></p>
    <p class="muted">from ${l.clientAddress} · ${l.userAgent} · asked at ${new Date(l.createdAt).toLocaleTimeString()}, until ${new Date(l.expiresAt).toLocaleTimeString()}</p>
    <form class="deploy" aria-label="Confirm the CLI's sign-in" onSubmit=${async e=>{e.preventDefault(),o(``);try{let e=(await q(Ye,{code:l.code,tenant:r})).approveCliLogin;e.userErrors.length||!e.apiToken?o(Z(e.userErrors)):c(`A token "${e.apiToken.name}" was made for it, working until ${new Date(e.apiToken.expiresAt??``).toLocaleDateString()}.`)}catch(e){o(e.message)}}}>
      <label for="cli-tenant">Tenant</label>
      <select id="cli-tenant" value=${r} onChange=${e=>i(e.target.value)}>
        ${t.viewer.tenants.nodes.map(e=>X`<option value=${e.id}>${e.name}</option>`)}
      </select>
      <button type="submit">Confirm: sign the CLI in</button>
      ${a?X`<p role="alert" class="problem">${a}</p>`:``}
    </form>
  `:X`<h1>Sign in the CLI</h1><p role="alert" class="problem">No CLI sign-in waits with the code ${e}: it expired (it works for 10 minutes) or was confirmed already. Run <code>nebula login --web</code> again.</p>`}var Ze=K(`
  query ConsoleCluster($id: ID!) {
    node(id: $id) {
      ... on Cluster {
        id name status lastHeartbeatAge desiredRevision appliedRevision
        labels { key value }
        tenant { viewerRole }
        activeRevision { number confirmed reportedAt }
        inventory {
          agentVersion kubernetesVersion capabilities
          nodes(first: 100) { nodes { name ready } pageInfo { hasNextPage } }
          workloads(first: 100) { nodes { namespace name replicas readyReplicas } pageInfo { hasNextPage } }
        }
        install { command }
      }
    }
  }
`),Qe=K(`
  query ConsoleClusterRevisions($id: ID!) {
    node(id: $id) {
      ... on Cluster {
        revisions(first: 10) {
          nodes {
            number hash createdAt
            cause { action actor { email } }
            outcomes { agent result at }
          }
          pageInfo { hasNextPage }
        }
      }
    }
  }
`),$e=K(`
  mutation ConsoleRegenerateToken($id: ID!, $name: String!) {
    regenerateConnectToken(input: { clusterId: $id, confirmName: $name }) {
      secret
      userErrors { message }
    }
  }
`);function et({id:e}){let[t,n]=V(null),[r,i]=V(null),[a,o]=V(``),[s,c]=V(``),[l,u]=V(``),[d,f]=V(``);if(H(()=>{q(Ze,{id:e}).then(t=>{if(!t.node||!(`status`in t.node)){o(`No such cluster, or not yours to see.`);return}let r=t.node;n(r),r.tenant.viewerRole===`ADMIN`&&q(Qe,{id:e}).then(e=>e.node&&`revisions`in e.node&&i(e.node.revisions))},e=>o(e.message))},[e]),a)return X`<${Q} error=${a} />`;if(!t)return X`<p aria-busy="true">Loading…</p>`;let p=t.tenant.viewerRole===`ADMIN`;return X`
    <p><a href="#/">← Overview</a></p>
    <h1>Cluster ${t.name} <span class=${`status `+t.status.toLowerCase()}>${t.status}</span></h1>
    <p class="muted">${t.labels.map(e=>`${e.key}=${e.value}`).join(`, `)} · heartbeat ${Ie(t.lastHeartbeatAge)}</p>
    <p>Revision ${t.desiredRevision} desired, ${t.appliedRevision} applied${t.activeRevision?X`; the agent runs ${t.activeRevision.number} (${t.activeRevision.confirmed?`confirmed by its hash`:`hash not confirmed`})`:``}.</p>
    ${t.inventory?X`<h2>Inventory</h2>
        <p class="muted">agent ${t.inventory.agentVersion} · Kubernetes ${t.inventory.kubernetesVersion} · ${t.inventory.capabilities.join(`, `)}</p>
        <ul>${t.inventory.nodes.nodes.map(e=>X`<li>${e.name} ${e.ready?`ready`:X`<span class="problem">not ready</span>`}</li>`)}</ul>
        ${t.inventory.nodes.pageInfo.hasNextPage?X`<p class="muted">The first 100 nodes by name; there are more.</p>`:``}
        <table tabindex="0"><thead><tr><th scope="col">Workload</th><th scope="col">Ready</th></tr></thead>
          <tbody>${t.inventory.workloads.nodes.map(e=>X`<tr><td>${e.namespace}/${e.name}</td><td>${e.readyReplicas} / ${e.replicas}</td></tr>`)}</tbody></table>
        ${t.inventory.workloads.pageInfo.hasNextPage?X`<p class="muted">The first 100 workloads by namespace and name; there are more.</p>`:``}`:X`<p>No agent has reported yet.</p>`}
    <h2>Install the agent</h2>
    <pre class="command"><code>${t.install.command}</code></pre>
    ${p?X`<h2>Connect token</h2>
        ${l?X`<p role="status">New connect token, shown only now: <code data-testid="secret">${l}</code>. The old one works for its grace window.</p>`:X`<form class="deploy" onSubmit=${async t=>{t.preventDefault(),f(``);let n=(await q($e,{id:e,name:s})).regenerateConnectToken;n.userErrors.length||!n.secret?f(Z(n.userErrors)):u(n.secret)}} aria-label="Regenerate the connect token">
              <label for="confirm-name">Type the cluster's name</label>
              <input id="confirm-name" value=${s} onInput=${e=>c(e.target.value)} required />
              <button type="submit">Regenerate connect token</button>
              ${d?X`<p role="alert" class="problem">${d}</p>`:``}
            </form>`}`:``}
    ${r?X`<h2>Revisions</h2>
        <table tabindex="0"><thead><tr><th scope="col">Revision</th><th scope="col">Made by</th><th scope="col">Applied</th></tr></thead>
          <tbody>${r.nodes.map(e=>X`<tr><td>${e.number} <code class="muted">${e.hash.slice(0,12)}</code></td>
              <td>${e.cause?`${e.cause.action}${e.cause.actor?` by `+e.cause.actor.email:``}`:``}</td>
              <td>${e.outcomes.map(e=>`${e.result.toLowerCase()} by ${e.agent}`).join(`, `)}</td></tr>`)}</tbody></table>`:``}
  `}var tt=K(`
  query ConsoleBuild($id: ID!) {
    node(id: $id) {
      ... on Build {
        id status message commit branch imageDigest attempts startedAt finishedAt
        cluster { name }
        log(first: 1) { truncated }
      }
    }
  }
`),nt=K(`
  subscription ConsoleBuildLog($id: ID!, $after: Int) {
    buildLog(buildId: $id, after: $after) { number at text }
  }
`);function rt({id:e,onImage:t}){let[n,r]=V(null),[i,a]=V([]),[o,s]=V({on:!1});if(H(()=>{let n=()=>q(tt,{id:e}).then(e=>{e.node&&`commit`in e.node&&(r(e.node),e.node.imageDigest&&t(e.node.imageDigest))},()=>{});n();let i=0,o=[];return Y(nt,()=>({id:e,after:i}),e=>{let t=e.buildLog;t.number<=i||(i===0&&n(),i=t.number,o=[...o,t].slice(-2e3),a(o))},(e,t)=>{s({on:e,why:t}),t===`ended`&&n()})},[e]),!n)return X`<p aria-busy="true">Loading the build…</p>`;let c=o.why===`ended`;return X`
    <section aria-labelledby="build-h">
      <h2 id="build-h">Build</h2>
      <p>Commit <code>${n.commit.slice(0,12)}</code> of ${n.branch}${n.cluster?` on ${n.cluster.name}`:``}:${` `}
        <strong class=${`stage `+n.status.toLowerCase()} data-testid="build-status">${n.status}</strong>
        ${n.attempts>1?X` <span class="muted">(attempt ${n.attempts})</span>`:``}
        <span class=${o.on?`live on`:`live`}>${o.on?`live`:c?`ended`:`reconnecting…`}</span></p>
      ${n.message?X`<p class="muted">${n.message}</p>`:``}
      ${n.imageDigest?X`<p>Image <code>${n.imageDigest}</code></p>`:``}
      ${i.length===0?X`<p class="muted">${c?`The build wrote no log.`:`No line yet: the build starts when the cluster has room for it.`}</p>`:X`<ol class="logs" aria-label="Build log" tabindex="0">
            ${i.map(e=>X`<li data-number=${e.number}><span class="muted">${e.number}</span> ${e.text}</li>`)}
          </ol>`}
      ${n.log.truncated?X`<p class="muted">The build wrote more than is kept; its last kept line says so.</p>`:``}
    </section>
  `}var it=K(`
  mutation ConsoleApprove($id: ID!) {
    approveDeployment(input: { deploymentId: $id }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`),at=K(`
  mutation ConsoleReject($id: ID!) {
    rejectDeployment(input: { deploymentId: $id }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`),ot=K(`
  mutation ConsoleCancel($id: ID!) {
    cancelDeployment(input: { deploymentId: $id, reason: "cancelled from the console" }) {
      deployment { id stage }
      userErrors { message }
    }
  }
`),st=K(`
  mutation ConsoleRedeploy($id: ID!) {
    redeploy(input: { deploymentId: $id }) {
      deployment { id }
      userErrors { message }
    }
  }
`),ct=K(`
  query ConsoleDeployment($id: ID!) {
    node(id: $id) {
      ... on Deployment {
        id stage blocker message createdAt approvalExpiresAt
        requestedBy { email }
        release { number imageDigest service { id name } }
        build { id }
        environment { id name protected project { name viewerRole tenant { viewerRole } } }
        cluster { id name }
      }
    }
  }
`),lt=K(`
  subscription DeploymentEvents($id: ID!, $after: String) {
    deploymentEvents(deploymentId: $id, after: $after) {
      cursor sequence stage blocker message at
    }
  }
`);function ut(e){switch(e.blocker){case`DELIVERY`:return`Waiting for the agent of cluster ${e.cluster.name} to connect: the deployment goes on when it does.`;case`APPROVAL`:return`Waiting for a project manager or tenant admin to approve it${e.requestedBy?` (requested by ${e.requestedBy.email})`:``}${e.approvalExpiresAt?`, until ${new Date(e.approvalExpiresAt).toLocaleString()}; after that it can no longer be approved`:``}.`;case`STALLED`:return`No progress for a while: the rollout may be stuck (pods not becoming ready, the agent gone quiet). The cluster page and the service's logs tell more.`;case`BUILD`:return`Waiting for the release's image to be built: the build and its log are below.`;default:return`Waiting for ${String(e.blocker).toLowerCase()}.`}}function dt({id:e}){let[t,n]=V(null),[r,i]=V(``),[a,o]=V([]),[s,c]=V({on:!1}),[l,u]=V(``),d=async t=>{u(``);try{let n=await t();n.userErrors.length?u(Z(n.userErrors)):n.deployment&&n.deployment.id!==e&&(window.location.hash=`#/deployments/`+n.deployment.id)}catch(e){u(e.message)}},f=()=>d(async()=>(await q(ot,{id:e})).cancelDeployment),p=()=>d(async()=>(await q(st,{id:e})).redeploy),m=t=>d(async()=>t?(await q(it,{id:e})).approveDeployment:(await q(at,{id:e})).rejectDeployment);return H(()=>{q(ct,{id:e}).then(e=>e.node&&`stage`in e.node?n(e.node):i(`No such deployment, or not yours to see.`),e=>i(e.message));let t=null,r=[];return Y(lt,()=>({id:e,after:t?.cursor??null}),e=>{let i=e.deploymentEvents;t&&i.sequence<=t.sequence||(t=i,r.push(i),o([...r]),n(e=>e&&{...e,stage:i.stage,blocker:i.blocker,message:i.message}))},(e,t)=>c({on:e,why:t}))},[e]),r?X`<${Q} error=${r} />`:t?X`
    <p><a href="#/">← Overview</a></p>
    <h1>${t.release.service.name} release ${t.release.number} → ${t.environment.name}</h1>
    <p class="muted">${t.environment.project.name} · cluster <a href=${`#/clusters/`+t.cluster.id}>${t.cluster.name}</a> · <code>${t.release.imageDigest||`image not built yet`}</code>
      · <a href=${`#/logs/${t.release.service.id}/${t.environment.id}`}>logs</a></p>
    <p>Stage: <strong class=${`stage `+t.stage.toLowerCase()} data-testid="stage">${t.stage}</strong>
      ${t.blocker?X` <span class="badge warn">${t.blocker.toLowerCase()}</span>`:``}
      <span class=${s.on?`live on`:`live`} role="status">${s.on?`live`:s.why===`ended`?`ended`:`reconnecting…`}</span></p>
    ${t.blocker?X`<p class="blocker" data-testid="blocker">${ut(t)}</p>`:``}
    ${t.stage===`AWAITING_APPROVAL`&&Re(t.environment.project.tenant.viewerRole,t.environment.project.viewerRole)?X`<p class="decide">
          <button type="button" onClick=${()=>m(!0)}>Approve</button>
          <button type="button" class="secondary" onClick=${()=>m(!1)}>Reject</button></p>`:``}
    ${Le(t.environment.project.tenant.viewerRole,t.environment.project.viewerRole,t.environment.protected)?X`<p class="decide">
          ${[`SUCCEEDED`,`FAILED`,`ROLLED_BACK`,`CANCELLED`,`SUPERSEDED`].includes(t.stage)?X`<button type="button" class="secondary" onClick=${p}>Redeploy this release</button>`:X`<button type="button" class="secondary" onClick=${f}>Cancel</button>`}</p>`:``}
    ${l?X`<p role="alert" class="problem">${l}</p>`:``}
    ${t.build?X`<${rt} id=${t.build.id}
          onImage=${e=>n(t=>t&&{...t,release:{...t.release,imageDigest:e}})} />`:``}
    <h2>Stages</h2>
    <ol class="timeline" aria-label="Stages">
      ${a.map(e=>X`<li data-sequence=${e.sequence} data-stage=${e.stage}>
          <span class=${`stage `+e.stage.toLowerCase()}>${e.stage}</span>
          <time datetime=${e.at}>${new Date(e.at).toLocaleTimeString()}</time>
          <span class="message">${e.message}</span>
        </li>`)}
    </ol>
  `:X`<p aria-busy="true">Loading…</p>`}var ft=K(`
  query ConsoleEnvironment($id: ID!) {
    node(id: $id) {
      ... on Environment {
        id name protected
        clusterSelector { key value }
        namespaceSelector { key value }
        placement { cluster { id name } namespace problem }
        eligibleClusters(first: 10) { nodes { name } }
        variables { id name scope secret value status statusReason }
        project {
          name viewerRole
          tenant { viewerRole }
          services(first: 20) {
            nodes { id name releases(first: 5, environmentId: $id) { nodes { number imageDigest createdAt } } }
          }
        }
        deployments(first: 10) { nodes { id stage createdAt release { number service { name } } } }
      }
    }
  }
`),pt=K(`
  mutation ConsoleRollback($service: ID!, $env: ID!, $number: Int!) {
    rollback(input: { serviceId: $service, environmentId: $env, releaseNumber: $number }) {
      deployment { id }
      userErrors { message }
    }
  }
`);function mt({id:e}){let[t,n]=V(null),[r,i]=V(``);if(H(()=>{q(ft,{id:e}).then(e=>e.node&&`placement`in e.node?n(e.node):i(`No such environment, or not yours to see.`),e=>i(e.message))},[e]),r)return X`<${Q} error=${r} />`;if(!t)return X`<p aria-busy="true">Loading…</p>`;let a=Le(t.project.tenant.viewerRole,t.project.viewerRole,t.protected),o=e=>e.map(e=>`${e.key}=${e.value}`).join(`, `)||`any`,s=async(t,n)=>{let r=(await q(pt,{service:t,env:e,number:n})).rollback;r.userErrors.length||!r.deployment?i(Z(r.userErrors)):window.location.hash=`#/deployments/`+r.deployment.id};return X`
    <p><a href="#/">← Overview</a></p>
    <h1>${t.project.name} / ${t.name} ${t.protected?X`<span class="badge">protected</span>`:``}</h1>
    <h2>Placement</h2>
    <p class="muted">clusters ${o(t.clusterSelector)} · namespaces ${o(t.namespaceSelector)}</p>
    ${t.placement.cluster?X`<p>Lands on <a href=${`#/clusters/`+t.placement.cluster.id}>${t.placement.cluster.name}</a>, namespace <code>${t.placement.namespace}</code>.</p>`:X`<p role="alert" class="problem">${t.placement.problem}</p>`}
    ${t.eligibleClusters.nodes.length>1?X`<p class="muted">Eligible: ${t.eligibleClusters.nodes.map(e=>e.name).join(`, `)}</p>`:``}
    <h2>Variables</h2>
    <table tabindex="0"><thead><tr><th scope="col">Name</th><th scope="col">Scope</th><th scope="col">Value</th></tr></thead>
      <tbody>${t.variables.map(e=>X`<tr><td><code>${e.name}</code></td><td>${e.scope.toLowerCase()}</td>
          <td>${e.secret?X`<span class="muted" data-secret="true">secret (not shown)</span>`:X`<code>${e.value}</code>`}
            ${e.status===`SET`?``:X` <span class="badge warn">${e.status}: ${e.statusReason}</span>`}</td></tr>`)}</tbody></table>
    <h2>Releases</h2>
    ${t.project.services.nodes.map(e=>X`<h3>${e.name} <a class="small" href=${`#/logs/${e.id}/${t.id}`}>logs</a></h3>
        <ul>${e.releases.nodes.map((t,n)=>X`<li>release ${t.number} <code class="muted">${t.imageDigest.slice(0,19)}…</code>
            ${a&&n>0?X`<button type="button" class="small secondary" onClick=${()=>s(e.id,t.number)}>Roll back to ${t.number}</button>`:``}</li>`)}</ul>`)}
    <h2>Deployments</h2>
    <ul>${t.deployments.nodes.map(e=>X`<li><a href=${`#/deployments/`+e.id}>${e.release.service.name} release ${e.release.number}</a>
        <span class=${`stage `+e.stage.toLowerCase()}>${e.stage}</span></li>`)}</ul>
  `}var ht=K(`
  query ConsoleLogs($service: ID!, $env: ID!, $filter: LogFilter) {
    node(id: $service) {
      ... on Service {
        name
        logs(environmentId: $env, filter: $filter, last: 200) {
          nodes { number at stream text pod }
        }
      }
    }
  }
`),gt=K(`
  subscription ConsoleLogTail($service: ID!, $env: ID!, $after: Int, $filter: LogFilter) {
    serviceLogs(serviceId: $service, environmentId: $env, after: $after, filter: $filter) {
      number at stream text pod
    }
  }
`);function _t({service:e,env:t}){let[n,r]=V(``),[i,a]=V([]),[o,s]=V(``),[c,l]=V(``),[u,d]=V({on:!1}),[f,p]=V(``);return H(()=>{let n=c?{text:c}:null,i=0,o=[],s=null,l=!1;return q(ht,{service:e,env:t,filter:n}).then(c=>{if(l)return;let u=c.node&&`logs`in c.node?c.node:null;u?(r(u.name),o=u.logs.nodes,i=o.length?o[o.length-1].number:0,a(o),s=Y(gt,()=>({service:e,env:t,after:i,filter:n}),e=>{let t=e.serviceLogs;t.number<=i||(i=t.number,o=[...o,t].slice(-2e3),a(o))},(e,t)=>d({on:e,why:t}))):p(`No such service, or not yours to see.`)},e=>p(e.message)),()=>{l=!0,s?.()}},[e,t,c]),f?X`<${Q} error=${f} />`:X`
    <p><a href="#/">← Overview</a></p>
    <h1>Logs of ${n}</h1>
    <form class="deploy" aria-label="Filter the logs" onSubmit=${e=>{e.preventDefault(),l(o)}}>
      <label for="log-text">Lines containing</label>
      <input id="log-text" value=${o} onInput=${e=>s(e.target.value)} />
      <button type="submit">Filter</button>
    </form>
    <p><span class=${u.on?`live on`:`live`} role="status">${u.on?`live`:`reconnecting…`}</span></p>
    <ol class="logs" aria-label="Log lines">
      ${i.map(e=>X`<li data-number=${e.number} class=${e.stream.toLowerCase()}>
          <time datetime=${e.at}>${new Date(e.at).toLocaleTimeString()}</time> <span class="muted">${e.pod}</span> ${e.text}</li>`)}
    </ol>
  `}var vt=K(`
  query ConsolePreviewDeploy($input: DeployInput!) {
    previewDeploy(input: $input) {
      clusters {
        cluster { name }
        fromRevision
        added { kind namespace name }
        changed { kind namespace name }
        removed { kind namespace name }
        nowHeld { service reason }
        released { service }
      }
      userErrors { field message code }
    }
  }
`),yt=K(`
  mutation ConsoleDeploy($input: DeployInput!) {
    deploy(input: $input) {
      deployment { id stage }
      userErrors { field message code }
    }
  }
`);function bt({environment:e,name:t,gated:n,services:r}){let[i,a]=V(!1),[o,s]=V(r[0]?.id??``),[c,l]=V(``),[u,d]=V(!1),[f,p]=V(null),[m,h]=V(``),[g,_]=V(!1);if(!r.length)return null;if(!i)return X`<button type="button" class="small" onClick=${()=>a(!0)}>Deploy to ${t}…</button>`;let v=r.find(e=>e.id===o)??r[0],y=v.git??null,b=y?u?{serviceId:v.id,environmentId:e,branchHead:!0}:{serviceId:v.id,environmentId:e,commit:c.trim()}:{serviceId:v.id,environmentId:e,imageDigest:c.trim()},x=e=>{e(),p(null),h(``)},S=async e=>{e.preventDefault(),h(``),_(!0);try{let e=await q(vt,{input:b});e.previewDeploy.userErrors.length?h(Z(e.previewDeploy.userErrors)):p(e.previewDeploy)}catch(e){h(e.message)}finally{_(!1)}},C=async()=>{_(!0);try{let e=await q(yt,{input:b});e.deploy.userErrors.length||!e.deploy.deployment?h(Z(e.deploy.userErrors)):window.location.hash=`#/deployments/`+e.deploy.deployment.id}catch(e){h(e.message)}finally{_(!1)}},w=`deploy-`+e,T=y?`Nothing changes on a cluster yet: the ${u?`head of ${y.branch}`:`commit`} is built first on the environment's cluster${n?`, then waits for another project manager to approve it`:``}.`:n?`Nothing changes until another project manager approves it: the environment is protected.`:`Nothing changes on any cluster.`;return X`<form class="deploy" onSubmit=${S} aria-label=${`Deploy to `+t}>
    <label for=${w+`-svc`}>Service</label>
    <select id=${w+`-svc`} value=${v.id} onChange=${e=>x(()=>{s(e.target.value),l(``),d(!1)})}>
      ${r.map(e=>X`<option value=${e.id}>${e.name}${e.git?` (built from Git)`:``}</option>`)}
    </select>
    ${y?X`<label for=${w+`-head`}>Branch head</label>
        <span><input id=${w+`-head`} type="checkbox" checked=${u} onChange=${e=>x(()=>d(e.target.checked))} />
          <span class="muted"> build what ${y.branch} points at now</span></span>
        ${u?``:X`<label for=${w+`-what`}>Commit</label>
            <input id=${w+`-what`} value=${c} placeholder="40 hex digits" spellcheck="false" required pattern="[0-9a-fA-F]{40}"
              onInput=${e=>x(()=>l(e.target.value))} />`}`:X`<label for=${w+`-what`}>Image digest</label>
        <input id=${w+`-what`} value=${c} placeholder="sha256:…" spellcheck="false" required
          onInput=${e=>x(()=>l(e.target.value))} />`}
    <button type="submit" disabled=${g}>Preview</button>
    ${m?X`<p role="alert" class="problem">${m}</p>`:``}
    ${f?X`<div class="preview" aria-label="Change preview">
          ${f.clusters.length===0?X`<p>${T}</p>`:``}
          ${f.clusters.map(e=>X`<div><strong>${e.cluster.name}</strong> (revision ${e.fromRevision} → ${e.fromRevision+1})
              <ul>
                ${e.added.map(e=>X`<li>adds ${e.kind} ${e.namespace}/${e.name}</li>`)}
                ${e.changed.map(e=>X`<li>changes ${e.kind} ${e.namespace}/${e.name}</li>`)}
                ${e.removed.map(e=>X`<li>removes ${e.kind} ${e.namespace}/${e.name}</li>`)}
                ${e.nowHeld.map(e=>X`<li>holds ${e.service}: ${e.reason}</li>`)}
              </ul></div>`)}
          <button type="button" onClick=${C} disabled=${g}>Deploy</button>
        </div>`:``}
  </form>`}K(`
  fragment ConsoleClusterRow on Cluster {
    id name status lastHeartbeatAge desiredRevision appliedRevision
    activeRevision { number confirmed }
  }
`),K(`
  fragment ConsoleProjectCard on Project {
    id name viewerRole
    services(first: 20) { nodes { id name git { branch } } }
    environments(first: 10) {
      nodes {
        id name protected
        deployments(first: 3) {
          nodes { id stage createdAt release { number service { name } } }
        }
      }
      pageInfo { hasNextPage }
    }
  }
`),K(`
  fragment ConsoleTenantSection on Tenant {
    id name viewerRole
    clusters(first: 25) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } }
    projects(first: 10) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } }
  }
`);var xt=K(`
  query ConsoleOverview($after: String) {
    viewer {
      user { email name }
      tenants(first: 5, after: $after) { nodes { ...ConsoleTenantSection } pageInfo { hasNextPage endCursor } }
    }
  }
`),St=K(`
  query ConsoleMoreClusters($tenant: ID!, $after: String) {
    node(id: $tenant) {
      ... on Tenant { clusters(first: 25, after: $after) { nodes { ...ConsoleClusterRow } pageInfo { hasNextPage endCursor } } }
    }
  }
`),Ct=K(`
  query ConsoleMoreProjects($tenant: ID!, $after: String) {
    node(id: $tenant) {
      ... on Tenant { projects(first: 10, after: $after) { nodes { ...ConsoleProjectCard } pageInfo { hasNextPage endCursor } } }
    }
  }
`);function wt(e){let[t,n]=V(e.nodes),[r,i]=V(e.pageInfo.hasNextPage?e.pageInfo.endCursor??null:null),[a,o]=V(!1),[s,c]=V(``);return{items:t,more:async e=>{if(r){o(!0),c(``);try{let t=await e(r);t&&(n(e=>[...e,...t.nodes]),i(t.pageInfo.hasNextPage?t.pageInfo.endCursor??null:null))}catch(e){c(e.message)}finally{o(!1)}}},busy:a,error:s,hasMore:r!==null}}function $({list:e,label:t,next:n}){return!e.hasMore&&!e.error?null:X`<p>
    ${e.hasMore?X`<button type="button" class="secondary" disabled=${e.busy} onClick=${()=>e.more(n)}>${t}</button>`:``}
    ${e.error?X`<span role="alert" class="problem">${e.error}</span>`:``}</p>`}function Tt(){let[e,t]=V(null),[n,r]=V(``);return H(()=>{q(xt,{}).then(e=>t({email:e.viewer.user.email,tenants:e.viewer.tenants}),e=>r(e.message))},[]),n?X`<${Q} error=${n} />`:e?X`
    <h1>Overview</h1>
    <p class="muted">Signed in as ${e.email}</p>
    <${Et} first=${e.tenants} />
  `:X`<p aria-busy="true">Loading…</p>`}function Et({first:e}){let t=wt(e);return X`
    ${t.items.map(e=>X`<${Dt} key=${e.id} t=${e} />`)}
    <${$} list=${t} label="More tenants" next=${async e=>(await q(xt,{after:e})).viewer.tenants} />
  `}function Dt({t:e}){let t=wt(e.clusters),n=wt(e.projects);return X`
    <section aria-labelledby=${`t-`+e.id}>
      <h2 id=${`t-`+e.id}>${e.name} <span class="badge">${e.viewerRole}</span></h2>
      <h3>Clusters</h3>
      ${t.items.length===0?X`<p class="muted">No cluster yet.</p>`:``}
      <table tabindex="0" aria-label=${`Clusters of `+e.name}>
        <thead><tr><th scope="col">Cluster</th><th scope="col">Status</th><th scope="col">Heartbeat</th><th scope="col">Revision (desired / applied)</th></tr></thead>
        <tbody>
          ${t.items.map(e=>X`<tr data-cluster=${e.name}>
              <td><a href=${`#/clusters/`+e.id}>${e.name}</a></td>
              <td><span class=${`status `+e.status.toLowerCase()}>${e.status}</span></td>
              <td>${Ie(e.lastHeartbeatAge)}</td>
              <td>${e.desiredRevision} / ${e.appliedRevision}
                ${e.activeRevision?X` <span class="muted">(${e.activeRevision.confirmed?`confirmed`:`not confirmed`} by the agent)</span>`:``}</td>
            </tr>`)}
        </tbody>
      </table>
      <${$} list=${t} label="More clusters" next=${async t=>{let n=await q(St,{tenant:e.id,after:t});return n.node&&`clusters`in n.node?n.node.clusters:null}} />
      <h3>Projects</h3>
      ${n.items.length===0?X`<p class="muted">No project yet.</p>`:``}
      ${n.items.map(t=>X`<${Ot} key=${t.id} p=${t} tenantRole=${e.viewerRole} />`)}
      <${$} list=${n} label="More projects" next=${async t=>{let n=await q(Ct,{tenant:e.id,after:t});return n.node&&`projects`in n.node?n.node.projects:null}} />
    </section>
  `}function Ot({p:e,tenantRole:t}){return X`<div class="project" data-project=${e.name}>
    <h4>${e.name} <span class="badge">${e.viewerRole}</span></h4>
    <ul>
      ${e.environments.nodes.map(n=>X`<li>
          <a href=${`#/environments/`+n.id}><strong>${n.name}</strong></a>${n.protected?X` <span class="badge">protected</span>`:``}
          ${Le(t,e.viewerRole,n.protected)?X` <${bt} environment=${n.id} name=${n.name} gated=${n.protected} services=${e.services.nodes} />`:``}
          <ul>
            ${n.deployments.nodes.map(e=>X`<li><a href=${`#/deployments/`+e.id}>${e.release.service.name} release ${e.release.number}</a>
                <span class=${`stage `+e.stage.toLowerCase()}>${e.stage}</span></li>`)}
          </ul>
        </li>`)}
    </ul>
    ${e.environments.pageInfo.hasNextPage?X`<p class="muted">More environments than shown: open one to see it all, or use the API.</p>`:``}
  </div>`}var kt=K(`
  query ConsolePeople($tenant: ID!) {
    node(id: $tenant) {
      ... on Tenant {
        id name
        members(first: 100) { nodes { id role user { email name kind } } }
        invitations(first: 20) { nodes { id email status expiresAt } }
      }
    }
  }
`),At=K(`
  mutation ConsoleInvite($tenant: ID!, $email: String!, $name: String!, $role: TenantRole) {
    inviteMember(input: { tenantId: $tenant, email: $email, name: $name, role: $role }) {
      link
      userErrors { message }
    }
  }
`),jt=K(`
  mutation ConsoleRevokeInvitation($id: ID!) {
    revokeInvitation(input: { invitationId: $id }) {
      invitation { id status }
      userErrors { message }
    }
  }
`);function Mt(){let[e,t]=V(null),[n,r]=V(null),[i,a]=V(``),[o,s]=V(``),[c,l]=V(``),[u,d]=V(`MEMBER`),[f,p]=V(``),m=e=>q(kt,{tenant:e}).then(e=>e.node&&`members`in e.node?r(e.node):a(`No such tenant.`),e=>a(e.message));if(H(()=>{q(Fe).then(e=>{let n=e.viewer.tenants.nodes.find(e=>e.viewerRole===`ADMIN`);t(n?.id??``),n&&m(n.id)},e=>a(e.message))},[]),i)return X`<${Q} error=${i} />`;if(e===``)return X`<h1>People</h1><p>Inviting people is for tenant admins.</p>`;if(!n)return X`<p aria-busy="true">Loading…</p>`;let h=async e=>{e.preventDefault(),a(``),p(``);let t=(await q(At,{tenant:n.id,email:o,name:c,role:u})).inviteMember;t.userErrors.length||!t.link?a(Z(t.userErrors)):(p(t.link),m(n.id))},g=async e=>{let t=(await q(jt,{id:e})).revokeInvitation;t.userErrors.length?a(Z(t.userErrors)):m(n.id)};return X`
    <h1>People of ${n.name}</h1>
    <table tabindex="0"><thead><tr><th scope="col">Member</th><th scope="col">Role</th></tr></thead>
      <tbody>${n.members.nodes.map(e=>X`<tr><td>${e.user.name} <span class="muted">${e.user.email}${e.user.kind===`INTEGRATION`?` · integration`:``}</span></td><td>${e.role}</td></tr>`)}</tbody></table>
    <h2>Invite someone</h2>
    <form class="deploy" aria-label="Invite a person" onSubmit=${h}>
      <label for="inv-email">Email</label>
      <input id="inv-email" type="email" value=${o} required onInput=${e=>s(e.target.value)} />
      <label for="inv-name">Name</label>
      <input id="inv-name" value=${c} required onInput=${e=>l(e.target.value)} />
      <label for="inv-role">Role</label>
      <select id="inv-role" value=${u} onChange=${e=>d(e.target.value)}>
        <option value="MEMBER">member</option><option value="ADMIN">admin</option>
      </select>
      <button type="submit">Invite</button>
      ${i?X`<p role="alert" class="problem">${i}</p>`:``}
    </form>
    ${f?X`<p role="status">Give this link to the person; it works once and is shown only now: <code data-testid="link">${f}</code></p>`:``}
    <h2>Invitations</h2>
    <ul>${(n.invitations?.nodes??[]).map(e=>X`<li data-status=${e.status}>${e.email} <span class="badge">${e.status}</span>
        ${e.status===`OPEN`?X`<button type="button" class="small secondary" onClick=${()=>g(e.id)}>Revoke</button>`:``}</li>`)}</ul>
  `}function Nt(){let[e,t]=V(window.location.hash.slice(1)||`/`);return H(()=>{let e=()=>t(window.location.hash.slice(1)||`/`);return window.addEventListener(`hashchange`,e),()=>window.removeEventListener(`hashchange`,e)},[]),e}function Pt(){let e=Nt(),t=e.match(/^\/deployments\/([^/]+)$/),n=e.match(/^\/clusters\/([^/]+)$/),r=e.match(/^\/logs\/([^/]+)\/([^/]+)$/),i=e.match(/^\/environments\/([^/]+)$/),a=e.match(/^\/cli\/([^/]+)$/);return X`
    <header><a href="#/" class="brand">NebulaCtrl</a>
      <nav aria-label="Main"><a href="#/">Overview</a> <a href="#/approvals">Approvals</a> <a href="#/audit">Audit</a> <a href="#/people">People</a> <a href="#/account">Account</a>
        <a href="/graphiql">GraphiQL</a></nav></header>
    <main>${t?X`<${dt} id=${decodeURIComponent(t[1])} />`:n?X`<${et} id=${decodeURIComponent(n[1])} />`:r?X`<${_t} service=${decodeURIComponent(r[1])} env=${decodeURIComponent(r[2])} />`:i?X`<${mt} id=${decodeURIComponent(i[1])} />`:a?X`<${Xe} code=${decodeURIComponent(a[1])} />`:e===`/approvals`?X`<${Ge} />`:e===`/account`?X`<${He} />`:e===`/audit`?X`<${qe} />`:e===`/people`?X`<${Mt} />`:X`<${Tt} />`}</main>
  `}var Ft=document.getElementById(`app`);Ft.textContent=``,ce(X`<${Pt} />`,Ft);